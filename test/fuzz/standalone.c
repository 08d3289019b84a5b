/* test/fuzz/standalone.c — runs a libFuzzer target without libFuzzer (for
 * machines whose clang lacks the fuzzer runtime): every file given on the
 * command line (or in a directory given), then, per input, MUTATIONS
 * deterministic mutants (every truncation up to 256 bytes, byte flips and
 * byte sets at seeded positions). Built with gcc's ASan/UBSan by
 * test/fuzz/run-standalone.sh, so a crash, leak or UB report fails the run.
 * Not a fuzzer: no coverage feedback; it replays seeds and their neighbours. */
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_INPUT_BYTES ((size_t)1 << 20)
#define MUTATIONS 2000

static uint64_t rng = 0x9e3779b97f4a7c15ull;

/* The input being run, written to STANDALONE_ARTIFACT (default
 * ./crash-standalone) when the target aborts or faults, as libFuzzer's
 * crash-* artifacts are: replay it with `BIN FILE`. */
static const uint8_t *cur;
static size_t cur_len;
static const char *artifact = "crash-standalone";

static void on_crash(int sig) {
    int fd = open(artifact, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
        ssize_t w = write(fd, cur, cur_len);
        (void)w;
        close(fd);
    }
    static const char msg[] = "standalone: target crashed; input saved to the artifact file\n";
    ssize_t w = write(2, msg, sizeof msg - 1);
    (void)w;
    signal(sig, SIG_DFL);
    raise(sig);
}

static void call(const uint8_t *p, size_t n) {
    cur = p;
    cur_len = n;
    LLVMFuzzerTestOneInput(p, n);
}

static uint64_t next(void) {   /* splitmix64 */
    uint64_t z = (rng += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* One input and its mutants; returns the number of runs. */
static size_t run_one(const uint8_t *buf, size_t n) {
    size_t runs = 0;
    uint8_t *m = malloc(n ? n : 1);
    if (!m) { fprintf(stderr, "standalone: out of memory\n"); exit(2); }
    /* each call gets its own exact-size copy so ASan sees reads past the end */
    memcpy(m, buf, n);
    call(m, n);
    runs++;
    for (size_t cut = 0; cut < n && cut < 256; cut++) {
        uint8_t *t = malloc(cut ? cut : 1);
        if (!t) exit(2);
        memcpy(t, buf, cut);
        call(t, cut);
        free(t);
        runs++;
    }
    for (int i = 0; n && i < MUTATIONS; i++) {
        memcpy(m, buf, n);
        int edits = 1 + (int)(next() % 4);
        for (int e = 0; e < edits; e++) {
            size_t at = (size_t)(next() % n);
            switch (next() % 3) {
            case 0: m[at] ^= (uint8_t)(1u << (next() % 8)); break;
            case 1: m[at] = (uint8_t)next(); break;
            default: m[at] = (next() & 1) ? 0xff : 0x00; break;   /* lengths/counts: -1, huge, 0 */
            }
        }
        call(m, n);
        runs++;
    }
    free(m);
    return runs;
}

static size_t run_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) { fprintf(stderr, "standalone: cannot open %s\n", path); exit(2); }
    uint8_t *buf = malloc(MAX_INPUT_BYTES);
    if (!buf) exit(2);
    size_t n = fread(buf, 1, MAX_INPUT_BYTES, f);
    fclose(f);
    size_t runs = run_one(buf, n);
    free(buf);
    return runs;
}

int main(int argc, char **argv) {
    size_t files = 0, runs = 0;
    if (getenv("STANDALONE_ARTIFACT")) artifact = getenv("STANDALONE_ARTIFACT");
    signal(SIGABRT, on_crash);
    signal(SIGSEGV, on_crash);
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) != 0) { fprintf(stderr, "standalone: no such input %s\n", argv[i]); return 2; }
        if (!S_ISDIR(st.st_mode)) { runs += run_file(argv[i]); files++; continue; }
        DIR *d = opendir(argv[i]);
        if (!d) return 2;
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
            if (e->d_name[0] == '.') continue;
            char p[4096];
            snprintf(p, sizeof p, "%s/%s", argv[i], e->d_name);
            runs += run_file(p);
            files++;
        }
        closedir(d);
    }
    printf("standalone: %zu inputs, %zu runs, no failure\n", files, runs);
    return files ? 0 : 2;
}
