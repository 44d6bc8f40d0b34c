/*
 * C twins of the compiled kernels of the coloring and Hessian-assembly default path.
 *
 * Why: the first sparse Jacobian of a process spent 0.6 s in numba's own start-up (importing numba, then its
 * CPU target loading the cached machine code) for about 3 ms of coloring work.  A plain shared library loads in
 * microseconds.  stablehlo_sparsity/kernels/native.py loads this file's library with ctypes and passes array
 * pointers; stablehlo_sparsity/kernels/compiled.py calls a twin in place of its numba kernel.
 *
 * Contract: each exported function computes exactly what the numba kernel named in its comment computes (same
 * algorithm, same tie-breaking, same random numbers, same results), so the two are interchangeable bit for bit
 * (tests/coloring/test_native_kernels.py checks it).  Integer widths follow numba's typing: every scalar is 64 bits
 * wide (numba computes integer arithmetic at least 64 bits wide), every array keeps the element type the numba
 * kernel gives it (int32 colors, stamps and buffers where the kernel allocates them so).  Arrays the kernel
 * returns are allocated by the caller (NumPy) and filled here; scratch arrays are allocated here.
 *
 * Errors: a function returns SHS_NO_MEMORY when an allocation fails and SHS_NUMBA_RAISES where the numba kernel
 * raises (an empty random range, the argmin of nothing); the caller then runs the numba kernel, which raises.
 *
 * The graph kernels exist for int32 and int64 CSR arrays (graph.py builds int32, int64 only beyond 2**31
 * nonzeros): graph_kernels.h is included once per width.  C99, no Python or NumPy headers.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#if defined(_WIN32)
#define SHS_EXPORT __declspec(dllexport)
#else
#define SHS_EXPORT __attribute__((visibility("default")))
#endif

#define SHS_NO_MEMORY (-1)
#define SHS_NUMBA_RAISES (-2)

/* Bumped whenever an exported signature changes: native.py ignores a library of another version (a stale build). */
SHS_EXPORT int64_t shs_abi_version(void) { return 4; }

/* n elements of `size` bytes (at least one, so that an empty array is not mistaken for a failed allocation). */
static void *shs_alloc(int64_t n, size_t size, int zero)
{
    size_t count = n > 0 ? (size_t)n : 1;
    return zero ? calloc(count, size) : malloc(count * size);
}

static int64_t imax(int64_t a, int64_t b) { return a > b ? a : b; }

/* ------------------------------------------------------------------------------------------------------------------
 * numba's np.random: MT19937 seeded by init_genrand (numba/_random.c: numba_rnd_init, numba_rnd_shuffle), doubles
 * from two draws (numba/cpython/randomimpl.py: get_next_double), integers in [0, n) by masked rejection sampling
 * (_randrange_impl with the "np" state: n == 1 draws nothing, up to 32 bits from one draw, wider ones high word
 * first).  The kernels seed it on entry (np.random.seed), so no state survives a call on either side.
 */
#define MT_N 624
#define MT_M 397

typedef struct {
    uint32_t mt[MT_N];
    int index;
} shs_rng;

static void rng_seed(shs_rng *r, uint32_t seed)
{
    for (uint32_t pos = 0; pos < MT_N; pos++) {
        r->mt[pos] = seed;
        seed = 1812433253u * (seed ^ (seed >> 30)) + pos + 1;
    }
    r->index = MT_N;
}

static uint32_t mt_twist(uint32_t a, uint32_t b, uint32_t c)
{
    uint32_t y = (a & 0x80000000u) | (b & 0x7fffffffu);
    return c ^ (y >> 1) ^ ((0u - (y & 1u)) & 0x9908b0dfu);
}

static void rng_shuffle(shs_rng *r)
{
    int i;
    for (i = 0; i < MT_N - MT_M; i++)
        r->mt[i] = mt_twist(r->mt[i], r->mt[i + 1], r->mt[i + MT_M]);
    for (; i < MT_N - 1; i++)
        r->mt[i] = mt_twist(r->mt[i], r->mt[i + 1], r->mt[i + (MT_M - MT_N)]);
    r->mt[MT_N - 1] = mt_twist(r->mt[MT_N - 1], r->mt[0], r->mt[MT_M - 1]);
}

static uint32_t rng_next32(shs_rng *r)
{
    uint32_t y;
    if (r->index >= MT_N) {
        rng_shuffle(r);
        r->index = 0;
    }
    y = r->mt[r->index++];
    y ^= y >> 11;
    y ^= (y << 7) & 0x9d2c5680u;
    y ^= (y << 15) & 0xefc60000u;
    y ^= y >> 18;
    return y;
}

/* np.random.random() */
static double rng_random(shs_rng *r)
{
    uint32_t a = rng_next32(r) >> 5, b = rng_next32(r) >> 6;
    return ((double)a * 67108864.0 + (double)b) / 9007199254740992.0;
}

/* np.random.randint(n) with an int64 n into *out; SHS_NUMBA_RAISES for n <= 0 (numba: "empty range"). */
static int rng_randint(shs_rng *r, int64_t n, int64_t *out)
{
    uint64_t span;
    int nbits = 0;
    if (n <= 0)
        return SHS_NUMBA_RAISES;
    if (n == 1) {
        *out = 0;
        return 0;
    }
    for (span = (uint64_t)(n - 1); span; span >>= 1)
        nbits++;
    for (;;) {
        int64_t x;
        if (nbits <= 32) {
            x = (int64_t)(rng_next32(r) & (0xffffffffu >> (32 - nbits)));
        } else {
            uint64_t high = rng_next32(r) & (0xffffffffu >> (64 - nbits));
            uint64_t low = rng_next32(r);
            x = (int64_t)(low + (high << 32));
        }
        if (x < n) {
            *out = x;
            return 0;
        }
    }
}

/* np.random.permutation(k) into out (np.arange(k) shuffled: j = randint(i + 1) for i = k-1 … 1). */
static int rng_permutation(shs_rng *r, int64_t k, int64_t *out)
{
    for (int64_t i = 0; i < k; i++)
        out[i] = i;
    for (int64_t i = k - 1; i > 0; i--) {
        int64_t j, t;
        if (rng_randint(r, i + 1, &j))
            return SHS_NUMBA_RAISES;
        t = out[i];
        out[i] = out[j];
        out[j] = t;
    }
    return 0;
}

/* Draws of the generator for its test (tests/coloring/test_native_kernels.py, against numba's np.random): seeded
 * by seed, nrandom np.random.random() into random_out, then np.random.randint(ns[i]) for each of the nint bounds
 * into int_out, then np.random.permutation(kperm) into perm_out.  Returns SHS_NUMBA_RAISES for a bound <= 0. */
SHS_EXPORT int64_t shs_rng_draws(int64_t seed, int64_t nrandom, double *random_out, int64_t nint, const int64_t *ns,
                                 int64_t *int_out, int64_t kperm, int64_t *perm_out)
{
    shs_rng r;
    rng_seed(&r, (uint32_t)seed);
    for (int64_t i = 0; i < nrandom; i++)
        random_out[i] = rng_random(&r);
    for (int64_t i = 0; i < nint; i++)
        if (rng_randint(&r, ns[i], &int_out[i]))
            return SHS_NUMBA_RAISES;
    return rng_permutation(&r, kperm, perm_out);
}

/* np.argsort(-size[:k], kind="mergesort") into idx: classes by decreasing size, ties by index (a stable
 * bottom-up merge sort; tmp holds k entries). */
static void argsort_decreasing(const int64_t *size, int64_t k, int64_t *idx, int64_t *tmp)
{
    int64_t *src = idx, *dst = tmp;
    for (int64_t i = 0; i < k; i++)
        idx[i] = i;
    for (int64_t width = 1; width < k; width *= 2) {
        for (int64_t lo = 0; lo < k; lo += 2 * width) {
            int64_t mid = lo + width < k ? lo + width : k, hi = lo + 2 * width < k ? lo + 2 * width : k;
            int64_t a = lo, b = mid, o = lo;
            while (a < mid && b < hi)
                dst[o++] = size[src[a]] >= size[src[b]] ? src[a++] : src[b++];
            while (a < mid)
                dst[o++] = src[a++];
            while (b < hi)
                dst[o++] = src[b++];
        }
        int64_t *t = src;
        src = dst;
        dst = t;
    }
    if (src != idx)
        memcpy(idx, src, (size_t)k * sizeof *idx);
}

/* greedy._class_order: the vertices sorted by rank[colors[v]] (a counting sort, stable in v; start: k + 1). */
static void class_order(const int32_t *colors, int64_t nv, int64_t k, const int64_t *rank, int64_t *order,
                        int64_t *start)
{
    memset(start, 0, (size_t)(k + 1) * sizeof *start);
    for (int64_t v = 0; v < nv; v++)
        start[rank[colors[v]] + 1] += 1;
    for (int64_t r = 0; r < k; r++)
        start[r + 1] += start[r];
    for (int64_t v = 0; v < nv; v++) {
        int64_t r = rank[colors[v]];
        order[start[r]] = v;
        start[r] += 1;
    }
}

/* recolor.tabu_move: TabuCol's move among the conflicting vertices into (*bv, *bc, *best_d); SHS_NUMBA_RAISES
 * where the numba kernel's random draw raises (no conflicting vertex, or k = 1, with every move tabu). */
static int tabu_move(const int64_t *conf, int64_t nconf, const int64_t *col, const int32_t *gamma, int64_t k,
                           const int32_t *tabu, int64_t it, int64_t f, int64_t best_f, shs_rng *rng, int64_t *bv_out,
                           int64_t *bc_out, int64_t *best_d_out)
{
    int64_t best_d = (int64_t)1 << 30, bv = -1, bc = -1, ties = 0, r;
    for (int64_t i = 0; i < nconf; i++) {
        int64_t v = conf[i], cv = col[v], gv = gamma[v * k + cv];
        for (int64_t c = 0; c < k; c++) {
            int64_t d;
            if (c == cv)
                continue;
            d = (int64_t)gamma[v * k + c] - gv;
            if ((int64_t)tabu[v * k + c] > it && f + d >= best_f)
                continue;
            if (d < best_d) {
                best_d = d;
                bv = v;
                bc = c;
                ties = 1;
            } else if (d == best_d) {
                ties += 1;
                if (rng_randint(rng, ties, &r))
                    return SHS_NUMBA_RAISES;
                if (r == 0) {
                    bv = v;
                    bc = c;
                }
            }
        }
    }
    if (bv < 0) { /* every move is tabu: take a random one */
        if (rng_randint(rng, nconf, &r))
            return SHS_NUMBA_RAISES;
        bv = conf[r];
        if (rng_randint(rng, k - 1, &bc))
            return SHS_NUMBA_RAISES;
        if (bc >= col[bv])
            bc += 1;
        best_d = (int64_t)gamma[bv * k + bc] - (int64_t)gamma[bv * k + col[bv]];
    }
    *bv_out = bv;
    *bc_out = bc;
    *best_d_out = best_d;
    return 0;
}

/* recolor.conflict_add / conflict_remove: TabuCol's list of conflicting vertices (where[v]: v's slot). */
static int64_t conflict_add(int64_t *conf, int64_t *where, int64_t nconf, int64_t v)
{
    where[v] = nconf;
    conf[nconf] = v;
    return nconf + 1;
}

static int64_t conflict_remove(int64_t *conf, int64_t *where, int64_t nconf, int64_t v)
{
    int64_t j = where[v], last = conf[nconf - 1];
    conf[j] = last;
    where[last] = j;
    where[v] = -1;
    return nconf - 1;
}

/* ------------------------------------------------------------------------------------------------ graph kernels */
#define IDX int32_t
#define NAME(f) f##_i32
#include "graph_kernels.h"
#undef IDX
#undef NAME

#define IDX int64_t
#define NAME(f) f##_i64
#include "graph_kernels.h"
#undef IDX
#undef NAME

/* ------------------------------------------------------------------------------- analysis/second_order/assembly */

/* assembly._advance: the row u of code c and the code base = n + u·n of pair (u, 0), moved forward. */
static void advance(int64_t c, int64_t *u, int64_t *base, int64_t n)
{
    while (c >= *base + n) {
        *u += 1;
        *base += n;
    }
}

/* assembly._row_counts: entries per row of U ∪ Uᵀ (count) and, of those, the lower ones (lower); both zeroed,
 * n entries each. */
SHS_EXPORT int64_t shs_row_counts(const int64_t *codes, int64_t ncodes, int64_t n, int64_t *count, int64_t *lower)
{
    int64_t u = 0, base = n;
    for (int64_t i = 0; i < ncodes; i++) {
        int64_t v;
        advance(codes[i], &u, &base, n);
        v = codes[i] - base;
        count[u] += 1;
        if (v != u) {
            count[v] += 1;
            lower[v] += 1;
        }
    }
    return 0;
}

/* assembly._fill: each row's lower entries, then its upper ones, in place: low[r] and up[r] are the next lower and
 * upper slots of row r (advanced as they are written); indices are int64, or int32 when `narrow`. */
SHS_EXPORT int64_t shs_fill(const int64_t *codes, int64_t ncodes, int64_t n, int64_t *low, int64_t *up, void *indices,
                            int64_t narrow)
{
    int64_t u = 0, base = n;
    int64_t *wide_out = indices;
    int32_t *narrow_out = indices;
    for (int64_t i = 0; i < ncodes; i++) {
        int64_t v;
        advance(codes[i], &u, &base, n);
        v = codes[i] - base;
        if (narrow)
            narrow_out[up[u]] = (int32_t)v;
        else
            wide_out[up[u]] = v;
        up[u] += 1;
        if (v != u) {
            if (narrow)
                narrow_out[low[v]] = (int32_t)u;
            else
                wide_out[low[v]] = u;
            low[v] += 1;
        }
    }
    return 0;
}

/* ------------------------------------------------------------------------------ analysis/second_order/pair_buckets */

/* The row u of pair code c (n + u·n + v) and its v, by a rounded reciprocal corrected to the exact quotient (two
 * integer divisions a code would cost more than the rest of the pass). */
static void split_code(int64_t c, int64_t n, double inv, int64_t *u, int64_t *v)
{
    int64_t q, r;
    c -= n;
    q = (int64_t)((double)c * inv);
    r = c - q * n;
    while (r < 0) {
        q -= 1;
        r += n;
    }
    while (r >= n) {
        q += 1;
        r -= n;
    }
    *u = q;
    *v = r;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* pair_buckets._bucket_pairs: out[:k] = the sorted distinct codes (k returned); out has ncodes slots. */
SHS_EXPORT int64_t shs_bucket_pairs(const int64_t *codes, int64_t ncodes, int64_t n, int64_t *out)
{
    int64_t *start = shs_alloc(n + 1, sizeof(int64_t), 1), *pos;
    double inv = n > 0 ? 1.0 / (double)n : 0.0;
    int64_t k = 0;
    if (!start)
        return SHS_NO_MEMORY;
    pos = shs_alloc(n, sizeof(int64_t), 0);
    if (!pos) {
        free(start);
        return SHS_NO_MEMORY;
    }
    for (int64_t i = 0; i < ncodes; i++) {
        int64_t u, v;
        split_code(codes[i], n, inv, &u, &v);
        start[u + 1] += 1;
    }
    for (int64_t u = 0; u < n; u++) {
        start[u + 1] += start[u];
        pos[u] = start[u];
    }
    for (int64_t i = 0; i < ncodes; i++) {
        int64_t u, v;
        split_code(codes[i], n, inv, &u, &v);
        out[pos[u]++] = v;
    }
    free(pos);
    for (int64_t u = 0; u < n; u++) {
        int64_t s = start[u], e = start[u + 1], base = n + u * n, last = -1;
        if (e - s > 32) {   /* pair_buckets.INSERTION_SORT_MAX */
            qsort(out + s, (size_t)(e - s), sizeof(int64_t), cmp_i64);
        } else {
            for (int64_t i = s + 1; i < e; i++) {
                int64_t x = out[i], j = i - 1;
                while (j >= s && out[j] > x) {
                    out[j + 1] = out[j];
                    j -= 1;
                }
                out[j + 1] = x;
            }
        }
        for (int64_t i = s; i < e; i++) {
            int64_t v = out[i];
            if (v != last) {
                out[k++] = base + v;   /* k <= i: a write never overtakes the read */
                last = v;
            }
        }
    }
    free(start);
    return k;
}

/* pair_marks._mark_codes: each column of `code` marked -- a first-order column c < n in first[c], a pair (u, v) whose
 * d = v - u has rank[d] >= 0 in mark[u * k + rank[d]], any other pair code set aside in spill[at], ...; -1 (none)
 * skipped.  Returns the next free slot of spill, -1 when it is full, -2 for a code outside [-1, n + n^2). */
SHS_EXPORT int64_t shs_mark_codes(const int64_t *code, int64_t ncodes, int64_t n, const int64_t *rank, int64_t nrank,
                                  int64_t k, uint8_t *first, uint8_t *mark, int64_t *spill, int64_t nspill, int64_t at)
{
    double inv = n > 0 ? 1.0 / (double)n : 0.0;
    int64_t end = n + n * n;
    for (int64_t i = 0; i < ncodes; i++) {
        int64_t c = code[i], u, v, d;
        if (c < n) {
            if (c >= 0)
                first[c] = 1;
            else if (c != -1)
                return -2;
            continue;
        }
        if (c >= end)
            return -2;
        split_code(c, n, inv, &u, &v);
        d = v - u;
        if (d < nrank && rank[d] >= 0) {
            mark[u * k + rank[d]] = 1;
        } else {
            if (at == nspill)
                return -1;
            spill[at++] = c;
        }
    }
    return at;
}

/* pair_buckets._drop_repeats: the distinct values of the sorted a moved to its front; returns how many. */
SHS_EXPORT int64_t shs_drop_repeats(int64_t *a, int64_t len)
{
    int64_t k = 0;
    for (int64_t i = 0; i < len; i++) {
        if (i == 0 || a[i] != a[k - 1])
            a[k++] = a[i];
    }
    return k;
}

/* sorted_union._merge_distinct: the sorted union of the sorted distinct a and b written to out (la + lb long at
 * least); returns its length. */
SHS_EXPORT int64_t shs_merge_distinct(const int64_t *a, int64_t la, const int64_t *b, int64_t lb, int64_t *out)
{
    int64_t i = 0, j = 0, k = 0;
    while (i < la && j < lb) {
        int64_t x = a[i], y = b[j];
        if (x <= y) {
            out[k++] = x;
            i++;
            j += x == y;
        } else {
            out[k++] = y;
            j++;
        }
    }
    while (i < la)
        out[k++] = a[i++];
    while (j < lb)
        out[k++] = b[j++];
    return k;
}
