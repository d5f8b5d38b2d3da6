/* Wine 8 has no bcryptprimitives.dll, whose ProcessPrng Rust's std (1.78+)
 * uses for its random seeds, so every Rust program exits 53 under it. This
 * stand-in for the test prefix only fills the buffer from RtlGenRandom
 * (advapi32's SystemFunction036), which wine 8 does implement. */
#include <windows.h>

BOOLEAN WINAPI SystemFunction036(PVOID buffer, ULONG length);

__declspec(dllexport) BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T length)
{
    while (length > 0) {
        ULONG chunk = length > 0x10000000 ? 0x10000000 : (ULONG)length;
        if (!SystemFunction036(data, chunk))
            return FALSE;
        data += chunk;
        length -= chunk;
    }
    return TRUE;
}
