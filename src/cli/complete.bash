
_gate_check_complete() {
    local IFS=$'\013'
    local space=true
    if compopt +o nospace 2> /dev/null; then
        space=false
    fi
    # bash splits a word at each character of COMP_WORDBREAKS, ':' and '=' among them, so
    # `--gate leaf-1:G` reaches this function as `leaf-1`, `:`, `G`. Pieces no blank separates in
    # the line are joined again for gate-check; the answers then lose what precedes the piece
    # bash replaces (as bash-completion's __ltrim_colon_completions does).
    local breaks= rest=${COMP_LINE:0:COMP_POINT} words=() joined=false index word blank last
    [[ $COMP_WORDBREAKS == *:* ]] && breaks+=:
    [[ $COMP_WORDBREAKS == *=* ]] && breaks+==
    for ((index = 0; index <= COMP_CWORD; index++)); do
        word=${COMP_WORDS[index]}
        blank=${rest%%[![:blank:]]*}
        rest=${rest#"$blank"}
        if ((index == COMP_CWORD)); then
            word=$rest
        elif [[ $rest != "$word"* ]]; then
            # The line does not read as the words do: complete the words as bash gave them.
            words=("${COMP_WORDS[@]:0:COMP_CWORD+1}") joined=false
            break
        fi
        last=$((${#words[@]} - 1))
        if [[ -n $breaks && $index -gt 1 && -z $blank ]] && [[ $word == ["$breaks"]* || ${words[last]} == *["$breaks"] ]]; then
            words[last]+=$word joined=true
        else
            words+=("$word") joined=false
        fi
        rest=${rest#"$word"}
    done
    last=$((${#words[@]} - 1))
    local current=${words[last]}
    if ! $joined && [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
        words[last]=$2
    fi
    COMPREPLY=( $( \
        _CLAP_IFS="$IFS" \
        _CLAP_COMPLETE_INDEX="$last" \
        _CLAP_COMPLETE_COMP_TYPE="${COMP_TYPE}" \
        _CLAP_COMPLETE_SPACE="$space" \
        VAR="bash" \
        "COMPLETER" -- "${words[@]}" \
    ) )
    if [[ $? != 0 ]]; then
        unset COMPREPLY
        return
    fi
    if $joined; then
        local prefix=${current%"${current##*["$breaks"]}"} answer answers=()
        for answer in "${COMPREPLY[@]}"; do
            [[ $answer == "$prefix"* ]] && answers+=("${answer#"$prefix"}")
        done
        COMPREPLY=("${answers[@]}")
    fi
    if [[ $space == false ]] && [[ "${COMPREPLY-}" =~ [=/:]$ ]]; then
        compopt -o nospace
    fi
}
if [[ "${BASH_VERSINFO[0]}" -eq 4 && "${BASH_VERSINFO[1]}" -ge 4 || "${BASH_VERSINFO[0]}" -gt 4 ]]; then
    complete -o nospace -o bashdefault -o nosort -F _gate_check_complete BIN
else
    complete -o nospace -o bashdefault -F _gate_check_complete BIN
fi
