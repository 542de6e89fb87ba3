/* The C-side cross-check of qprof's native memory figures (docs/MEMORY.md): one
 * OQS_SIG_verify of a public key and signature read from files, message 64 x 'm'.
 *
 *   gcc -O2 -I$OQS/include bench/memory_crosscheck.c -o /tmp/xcheck \
 *       -L$OQS/lib -loqs -Wl,-rpath,$OQS/lib
 *   /tmp/xcheck ALG PK SIG paint   warm-up verify, 512 KiB of stack painted, verify:
 *                                  prints the stack it used below main's frame
 *   LD_PRELOAD=libc_malloc_debug.so.0 MALLOC_TRACE=/tmp/t /tmp/xcheck ALG PK SIG trace
 *                                  warm-up verify, then mtrace around one verify
 *   valgrind --tool=massif --stacks=yes /tmp/xcheck ALG PK SIG once   (or: skip)
 *   valgrind --tool=dhat /tmp/xcheck ALG PK SIG once
 *
 * ALG is liboqs's name (ML-DSA-44, SLH_DSA_PURE_SHAKE_256S, ...); a key and signature
 * can be written from Python with qprof.verify.backends.liboqs_backend.LiboqsSigner. */
#include <mcheck.h>
#include <oqs/oqs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define PAINT (512 * 1024)
static unsigned char *painted;

static __attribute__((noinline)) void paint(void) {
    unsigned char buf[PAINT];
    memset(buf, 0xA5, sizeof buf);
#if defined(__GNUC__) && __GNUC__ >= 12
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdangling-pointer"
#endif
    painted = buf; /* read after the return: that is the point */
#if defined(__GNUC__) && __GNUC__ >= 12
#pragma GCC diagnostic pop
#endif
    __asm__ volatile("" : : "r"(buf) : "memory");
}

static unsigned char *slurp(const char *path, size_t *len) {
    struct stat st;
    FILE *f = fopen(path, "rb");
    if (!f || fstat(fileno(f), &st)) {
        perror(path);
        exit(2);
    }
    unsigned char *b = malloc((size_t)st.st_size);
    *len = fread(b, 1, (size_t)st.st_size, f);
    fclose(f);
    return b;
}

static __attribute__((noinline)) int verify(OQS_SIG *s, const unsigned char *m, size_t ml,
                                            const unsigned char *sig, size_t sl,
                                            const unsigned char *pk) {
    return OQS_SIG_verify(s, m, ml, sig, sl, pk);
}

int main(int argc, char **argv) {
    if (argc != 5) {
        fprintf(stderr, "usage: %s ALG PK SIG paint|trace|once|skip\n", argv[0]);
        return 2;
    }
    const char *mode = argv[4];
    size_t pkl, sigl;
    unsigned char *pk = slurp(argv[2], &pkl), *sig = slurp(argv[3], &sigl);
    unsigned char msg[64];
    memset(msg, 'm', sizeof msg);
    OQS_SIG *s = OQS_SIG_new(argv[1]);
    if (!s) {
        fprintf(stderr, "%s: not enabled in this liboqs\n", argv[1]);
        return 2;
    }
    int rc = -1;
    if (!strcmp(mode, "paint")) {
        verify(s, msg, sizeof msg, sig, sigl, pk);
        paint();
        unsigned char *top = __builtin_frame_address(0);
        rc = verify(s, msg, sizeof msg, sig, sigl, pk);
        unsigned char *p = painted;
        while (p < top && *p == 0xA5)
            p++;
        printf("%s verify=%d stack_bytes=%ld\n", argv[1], rc, (long)(top - p));
    } else if (!strcmp(mode, "trace")) {
        verify(s, msg, sizeof msg, sig, sigl, pk);
        mtrace();
        rc = verify(s, msg, sizeof msg, sig, sigl, pk);
        muntrace();
        printf("%s verify=%d\n", argv[1], rc);
    } else if (!strcmp(mode, "once")) {
        rc = verify(s, msg, sizeof msg, sig, sigl, pk);
        printf("%s verify=%d\n", argv[1], rc);
    }
    OQS_SIG_free(s);
    free(pk);
    free(sig);
    return 0;
}
