/*
 * The graph kernels for one width of CSR index arrays, included by kernels.c once per width: IDX is the element
 * type of ptr/nbr/optr/onbr (int32_t or int64_t), NAME(f) appends the width's suffix (_i32, _i64).
 *
 * A walk is the numba kernels' (nv, ptr, nbr, optr, onbr, d2): with d2, the conflict neighbours of v are the
 * vertices two steps away (nbr[ptr[v]:ptr[v+1]], then onbr[optr[w]:optr[w+1]]: coloring/graph.py, Bipartite);
 * without, its adjacency nbr[ptr[v]:ptr[v+1]] (Adjacency).  Each function names the numba kernel it mirrors.
 */

/* orderings.collect_neighbors with int64 stamps and buffer (as _degrees and _dynamic_order allocate them). */
static int64_t NAME(collect64)(int64_t v, const IDX *ptr, const IDX *nbr, const IDX *optr, const IDX *onbr, int d2,
                               int64_t *stamp, int64_t s, int64_t *buf)
{
    int64_t cnt = 0;
    stamp[v] = s;
    if (d2) {
        for (int64_t p = ptr[v], pe = ptr[v + 1]; p < pe; p++) {
            int64_t w = nbr[p];
            for (int64_t q = optr[w], qe = optr[w + 1]; q < qe; q++) {
                int64_t x = onbr[q];
                if (stamp[x] != s) {
                    stamp[x] = s;
                    buf[cnt++] = x;
                }
            }
        }
    } else {
        for (int64_t p = ptr[v], pe = ptr[v + 1]; p < pe; p++) {
            int64_t x = nbr[p];
            if (stamp[x] != s) {
                stamp[x] = s;
                buf[cnt++] = x;
            }
        }
    }
    return cnt;
}

/* orderings.collect_neighbors with int32 stamps and buffer (as recolor._drop_class allocates them): a stamp is
 * stored as int32 and compared, sign-extended, with the 64-bit s. */
static int64_t NAME(collect32)(int64_t v, const IDX *ptr, const IDX *nbr, const IDX *optr, const IDX *onbr, int d2,
                               int32_t *stamp, int64_t s, int32_t *buf)
{
    int64_t cnt = 0;
    stamp[v] = (int32_t)s;
    if (d2) {
        for (int64_t p = ptr[v], pe = ptr[v + 1]; p < pe; p++) {
            int64_t w = nbr[p];
            for (int64_t q = optr[w], qe = optr[w + 1]; q < qe; q++) {
                int64_t x = onbr[q];
                if ((int64_t)stamp[x] != s) {
                    stamp[x] = (int32_t)s;
                    buf[cnt++] = (int32_t)x;
                }
            }
        }
    } else {
        for (int64_t p = ptr[v], pe = ptr[v + 1]; p < pe; p++) {
            int64_t x = nbr[p];
            if ((int64_t)stamp[x] != s) {
                stamp[x] = (int32_t)s;
                buf[cnt++] = (int32_t)x;
            }
        }
    }
    return cnt;
}

/* greedy._greedy_pass: color `order` greedily into colors (overwritten); forbidden holds stamps s0 + 1 … s0 + nv.
 * Returns the number of colors. */
static int64_t NAME(greedy_pass)(int64_t nv, const IDX *ptr, const IDX *nbr, const IDX *optr, const IDX *onbr,
                                 int d2, const int64_t *order, int32_t *colors, int64_t *forbidden, int64_t s0)
{
    int64_t k = 0;
    for (int64_t t = 0; t < nv; t++)
        colors[order[t]] = -1;
    for (int64_t t = 0; t < nv; t++) {
        int64_t v = order[t], s = s0 + t + 1, c;
        if (d2) {
            for (int64_t p = ptr[v], pe = ptr[v + 1]; p < pe; p++) {
                int64_t w = nbr[p];
                for (int64_t q = optr[w], qe = optr[w + 1]; q < qe; q++) {
                    c = colors[onbr[q]];
                    if (c >= 0)
                        forbidden[c] = s;
                }
            }
        } else {
            for (int64_t p = ptr[v], pe = ptr[v + 1]; p < pe; p++) {
                c = colors[nbr[p]];
                if (c >= 0)
                    forbidden[c] = s;
            }
        }
        c = 0;
        while (forbidden[c] == s)
            c += 1;
        colors[v] = (int32_t)c;
        if (c >= k)
            k = c + 1;
    }
    return k;
}

/* greedy._greedy: colors (nv) of a greedy pass in `order`; returns the number of colors. */
SHS_EXPORT int64_t NAME(shs_greedy)(int64_t nv, const IDX *ptr, const IDX *nbr, const IDX *optr, const IDX *onbr,
                                    int d2, const int64_t *order, int32_t *colors)
{
    int64_t *forbidden = shs_alloc(nv + 1, sizeof(int64_t), 1), k;
    if (!forbidden)
        return SHS_NO_MEMORY;
    for (int64_t v = 0; v < nv; v++)
        colors[v] = -1;
    k = NAME(greedy_pass)(nv, ptr, nbr, optr, onbr, d2, order, colors, forbidden, 0);
    free(forbidden);
    return k;
}

/* greedy._iterated_greedy: Culberson's iterated greedy from colors (nv); best (nv) receives the best coloring,
 * the return value its number of colors. */
SHS_EXPORT int64_t NAME(shs_iterated_greedy)(int64_t nv, const IDX *ptr, const IDX *nbr, const IDX *optr,
                                             const IDX *onbr, int d2, const int32_t *colors, int64_t iters,
                                             int64_t target, int64_t patience, int64_t seed, int32_t *best)
{
    shs_rng rng;
    int32_t *cur = shs_alloc(nv, sizeof(int32_t), 0);
    int64_t *forbidden = shs_alloc(nv + 1, sizeof(int64_t), 1), *order = shs_alloc(nv, sizeof(int64_t), 0);
    int64_t *rank = shs_alloc(nv + 1, sizeof(int64_t), 0), *size = shs_alloc(nv + 1, sizeof(int64_t), 1);
    int64_t *perm = shs_alloc(nv + 1, sizeof(int64_t), 0), *tmp = shs_alloc(nv + 1, sizeof(int64_t), 0);
    int64_t *start = shs_alloc(nv + 2, sizeof(int64_t), 0);
    int64_t k = 0, bestk, s0 = 0, stall = 0, status = 0;
    if (!cur || !forbidden || !order || !rank || !size || !perm || !tmp || !start) {
        status = SHS_NO_MEMORY;
        goto done;
    }
    rng_seed(&rng, (uint32_t)seed);
    memcpy(cur, colors, (size_t)nv * sizeof *cur);
    memcpy(best, colors, (size_t)nv * sizeof *best);
    for (int64_t v = 0; v < nv; v++)
        if ((int64_t)cur[v] + 1 > k)
            k = (int64_t)cur[v] + 1;
    bestk = k;
    for (int64_t it = 0; it < iters; it++) {
        double u;
        if (bestk <= target)
            break;
        u = rng_random(&rng);
        if (u < 0.5) { /* reverse the classes */
            for (int64_t c = 0; c < k; c++)
                rank[c] = k - 1 - c;
        } else if (u < 0.8) { /* random permutation of the classes */
            if (rng_permutation(&rng, k, perm)) {
                status = SHS_NUMBA_RAISES;
                goto done;
            }
            for (int64_t c = 0; c < k; c++)
                rank[c] = perm[c];
        } else { /* largest class first */
            for (int64_t c = 0; c < k; c++)
                size[c] = 0;
            for (int64_t v = 0; v < nv; v++)
                size[cur[v]] += 1;
            argsort_decreasing(size, k, perm, tmp);
            for (int64_t r = 0; r < k; r++)
                rank[perm[r]] = r;
        }
        class_order(cur, nv, k, rank, order, start);
        k = NAME(greedy_pass)(nv, ptr, nbr, optr, onbr, d2, order, cur, forbidden, s0);
        s0 += nv;
        if (k < bestk) {
            bestk = k;
            memcpy(best, cur, (size_t)nv * sizeof *best);
            stall = 0;
        } else {
            stall += 1;
            if (stall >= patience)
                break;
        }
    }
    status = bestk;
done:
    free(cur);
    free(forbidden);
    free(order);
    free(rank);
    free(size);
    free(perm);
    free(tmp);
    free(start);
    return status;
}

/* greedy._dsatur: DSATUR with a bucket queue of doubly linked lists keyed by saturation·(dmax+1) + uncolored
 * degree; every per-vertex field in one int32 row of `state` (stamp, color, uncolored degree, key, next,
 * previous, words32 words of the neighbours' color set).  colors (nv) receives the coloring; returns its
 * number of colors. */
SHS_EXPORT int64_t NAME(shs_dsatur)(int64_t nv, const IDX *ptr, const IDX *nbr, const IDX *optr, const IDX *onbr,
                                    int d2, int64_t words32, const int32_t *deg0, int32_t *colors)
{
    enum { STAMP, COLOR, UDEG, KEY, NXT, PRV, MASK };
    const int64_t cap = 32 * words32, width = MASK + words32;
    int32_t *state = shs_alloc(nv * width, sizeof(int32_t), 1), *buf = shs_alloc(imax(nv, 1), sizeof(int32_t), 0);
    int32_t *forbidden = shs_alloc(nv + 1, sizeof(int32_t), 1), *head = NULL;
    int64_t dmax = 0, base, nhead, cur = 0, k = 0;
#define S(v, field) state[(v) * width + (field)]
    if (!state || !buf || !forbidden) {
        k = SHS_NO_MEMORY;
        goto done;
    }
    for (int64_t v = 0; v < nv; v++) {
        S(v, COLOR) = -1;
        S(v, UDEG) = deg0[v];
        S(v, KEY) = deg0[v];
        S(v, NXT) = -1;
        S(v, PRV) = -1;
        if (deg0[v] > dmax)
            dmax = deg0[v];
    }
    base = dmax + 1;
    nhead = (cap + 1) * base + 1;
    head = shs_alloc(nhead, sizeof(int32_t), 0);
    if (!head) {
        k = SHS_NO_MEMORY;
        goto done;
    }
    for (int64_t i = 0; i < nhead; i++)
        head[i] = -1;
    for (int64_t v = nv - 1; v >= 0; v--) { /* the lowest index ends up first among equal keys */
        int64_t kv = S(v, KEY);
        S(v, NXT) = head[kv];
        if (head[kv] >= 0)
            S(head[kv], PRV) = (int32_t)v;
        head[kv] = (int32_t)v;
        if (kv > cur)
            cur = kv;
    }
    for (int64_t t = 0; t < nv; t++) {
        int64_t v, nx, s = t + 1, cnt = 0, c, wi;
        uint32_t bit;
        int tracked;
        while (head[cur] < 0)
            cur -= 1;
        v = head[cur];
        nx = S(v, NXT);
        head[cur] = (int32_t)nx;
        if (nx >= 0)
            S(nx, PRV) = -1;
        /* distinct conflict neighbours; mark the colors they hold */
        S(v, STAMP) = (int32_t)s;
        if (d2) {
            for (int64_t p = ptr[v], pe = ptr[v + 1]; p < pe; p++) {
                int64_t w = nbr[p];
                for (int64_t q = optr[w], qe = optr[w + 1]; q < qe; q++) {
                    int64_t x = onbr[q];
                    if ((int64_t)S(x, STAMP) != s) {
                        S(x, STAMP) = (int32_t)s;
                        c = S(x, COLOR);
                        if (c >= 0)
                            forbidden[c] = (int32_t)s;
                        else
                            buf[cnt++] = (int32_t)x;
                    }
                }
            }
        } else {
            for (int64_t p = ptr[v], pe = ptr[v + 1]; p < pe; p++) {
                int64_t x = nbr[p];
                if ((int64_t)S(x, STAMP) != s) {
                    S(x, STAMP) = (int32_t)s;
                    c = S(x, COLOR);
                    if (c >= 0)
                        forbidden[c] = (int32_t)s;
                    else
                        buf[cnt++] = (int32_t)x;
                }
            }
        }
        c = 0;
        while ((int64_t)forbidden[c] == s)
            c += 1;
        S(v, COLOR) = (int32_t)c;
        if (c >= k)
            k = c + 1;
        tracked = c < cap;
        wi = MASK + c / 32;
        bit = (uint32_t)1 << (c % 32);
        for (int64_t i = 0; i < cnt; i++) { /* the uncolored conflict neighbours */
            int64_t x = buf[i], old = S(x, KEY), kx = old, px;
            if (S(x, UDEG) > 0) {
                S(x, UDEG) -= 1;
                kx -= 1;
            }
            if (tracked && ((uint32_t)S(x, wi) & bit) == 0) {
                S(x, wi) = (int32_t)((uint32_t)S(x, wi) | bit);
                kx += base;
            }
            if (kx == old)
                continue;
            S(x, KEY) = (int32_t)kx;
            px = S(x, PRV);
            nx = S(x, NXT);
            if (px >= 0)
                S(px, NXT) = (int32_t)nx;
            else
                head[old] = (int32_t)nx;
            if (nx >= 0)
                S(nx, PRV) = (int32_t)px;
            S(x, PRV) = -1;
            S(x, NXT) = head[kx];
            if (head[kx] >= 0)
                S(head[kx], PRV) = (int32_t)x;
            head[kx] = (int32_t)x;
            if (kx > cur)
                cur = kx;
        }
    }
    for (int64_t v = 0; v < nv; v++)
        colors[v] = S(v, COLOR);
#undef S
done:
    free(state);
    free(buf);
    free(forbidden);
    free(head);
    return k;
}

/* greedy._walk_lengths: out[v] = Σ_{w ∋ v} (|w| - 1). */
SHS_EXPORT int64_t NAME(shs_walk_lengths)(int64_t nv, const IDX *ptr, const IDX *nbr, const IDX *optr, int64_t *out)
{
    for (int64_t v = 0; v < nv; v++) {
        int64_t t = 0;
        for (int64_t p = ptr[v], pe = ptr[v + 1]; p < pe; p++) {
            int64_t w = nbr[p];
            t += (int64_t)optr[w + 1] - (int64_t)optr[w] - 1;
        }
        out[v] = t;
    }
    return 0;
}

/* greedy.split_bound: the lower bound of the split fwd (one byte per nonzero) of the m × n CSR pattern. */
SHS_EXPORT int64_t NAME(shs_split_bound)(int64_t m, int64_t n, const IDX *indptr, const IDX *indices,
                                         const uint8_t *fwd, int64_t stop)
{
    uint8_t *act_c = shs_alloc(n, 1, 1), *act_r = shs_alloc(m, 1, 1);
    int64_t *na_c = NULL, *ns_c = NULL, lf = 0, lr = 0, out;
    if (!act_c || !act_r) {
        out = SHS_NO_MEMORY;
        goto done;
    }
    for (int64_t i = 0; i < m; i++)
        for (int64_t p = indptr[i], pe = indptr[i + 1]; p < pe; p++) {
            if (fwd[p])
                act_c[indices[p]] = 1;
            else
                act_r[i] = 1;
        }
    for (int64_t i = 0; i < m; i++) {
        int64_t na = 0, ns = 0;
        for (int64_t p = indptr[i], pe = indptr[i + 1]; p < pe; p++) {
            if (act_c[indices[p]])
                na += 1;
            if (fwd[p])
                ns += 1;
        }
        if (ns > 0) {
            int64_t b = ns + (na > ns ? 1 : 0);
            if (b > lf)
                lf = b;
        }
    }
    if (lf >= stop) {
        out = lf;
        goto done;
    }
    na_c = shs_alloc(n, sizeof(int64_t), 1);
    ns_c = shs_alloc(n, sizeof(int64_t), 1);
    if (!na_c || !ns_c) {
        out = SHS_NO_MEMORY;
        goto done;
    }
    for (int64_t i = 0; i < m; i++) {
        if (!act_r[i])
            continue;
        for (int64_t p = indptr[i], pe = indptr[i + 1]; p < pe; p++) {
            int64_t j = indices[p];
            na_c[j] += 1;
            if (!fwd[p])
                ns_c[j] += 1;
        }
    }
    for (int64_t j = 0; j < n; j++)
        if (ns_c[j] > 0) {
            int64_t b = ns_c[j] + (na_c[j] > ns_c[j] ? 1 : 0);
            if (b > lr)
                lr = b;
        }
    out = lf + lr;
done:
    free(act_c);
    free(act_r);
    free(na_c);
    free(ns_c);
    return out;
}

/* orderings._degrees: deg (nv) = the number of distinct conflict neighbours of each vertex. */
SHS_EXPORT int64_t NAME(shs_degrees)(int64_t nv, const IDX *ptr, const IDX *nbr, const IDX *optr, const IDX *onbr,
                                     int d2, int64_t *deg)
{
    int64_t *stamp = shs_alloc(nv, sizeof(int64_t), 1), *buf = shs_alloc(imax(nv, 1), sizeof(int64_t), 0);
    if (!stamp || !buf) {
        free(stamp);
        free(buf);
        return SHS_NO_MEMORY;
    }
    for (int64_t v = 0; v < nv; v++)
        deg[v] = NAME(collect64)(v, ptr, nbr, optr, onbr, d2, stamp, v + 1, buf);
    free(stamp);
    free(buf);
    return 0;
}

/* orderings._dynamic_order: the bucket-queue ordering into order (nv): pick the vertex of max (pick_max) or min
 * key, add delta to the key of each unordered conflict neighbour; ties go to the most recently (re)inserted
 * vertex. */
SHS_EXPORT int64_t NAME(shs_dynamic_order)(int64_t nv, const IDX *ptr, const IDX *nbr, const IDX *optr,
                                           const IDX *onbr, int d2, const int64_t *key0,
                                           const int64_t *insert_order, int pick_max, int64_t delta, int64_t *order)
{
    int64_t *key = shs_alloc(nv, sizeof(int64_t), 0), *head = shs_alloc(nv + 1, sizeof(int64_t), 0);
    int64_t *nxt = shs_alloc(nv, sizeof(int64_t), 0), *prv = shs_alloc(nv, sizeof(int64_t), 0);
    int64_t *stamp = shs_alloc(nv, sizeof(int64_t), 1), *buf = shs_alloc(nv, sizeof(int64_t), 0);
    uint8_t *done = shs_alloc(nv, 1, 1);
    int64_t cur, status = 0;
    if (!key || !head || !nxt || !prv || !stamp || !buf || !done) {
        status = SHS_NO_MEMORY;
        goto out;
    }
    memcpy(key, key0, (size_t)nv * sizeof *key);
    for (int64_t i = 0; i <= nv; i++)
        head[i] = -1;
    for (int64_t v = 0; v < nv; v++)
        nxt[v] = prv[v] = -1;
    for (int64_t t = 0; t < nv; t++) {
        int64_t v = insert_order[t], k = key[v];
        nxt[v] = head[k];
        if (head[k] >= 0)
            prv[head[k]] = v;
        head[k] = v;
    }
    if (nv == 0)
        goto out;
    cur = key[0];
    for (int64_t v = 1; v < nv; v++)
        if (pick_max ? key[v] > cur : key[v] < cur)
            cur = key[v];
    for (int64_t t = 0; t < nv; t++) {
        int64_t v, cnt;
        if (pick_max)
            while (head[cur] < 0)
                cur -= 1;
        else
            while (head[cur] < 0)
                cur += 1;
        v = head[cur];
        /* unlink v (it is the head of its bucket) */
        head[cur] = nxt[v];
        if (nxt[v] >= 0)
            prv[nxt[v]] = -1;
        done[v] = 1;
        order[t] = v;
        cnt = NAME(collect64)(v, ptr, nbr, optr, onbr, d2, stamp, t + 1, buf);
        for (int64_t i = 0; i < cnt; i++) {
            int64_t x = buf[i], k;
            if (done[x])
                continue;
            k = key[x];
            /* unlink x from bucket k */
            if (prv[x] >= 0)
                nxt[prv[x]] = nxt[x];
            else
                head[k] = nxt[x];
            if (nxt[x] >= 0)
                prv[nxt[x]] = prv[x];
            k += delta;
            key[x] = k;
            prv[x] = -1;
            nxt[x] = head[k];
            if (head[k] >= 0)
                prv[head[k]] = x;
            head[k] = x;
            if (pick_max) {
                if (k > cur)
                    cur = k;
            } else if (k < cur) {
                cur = k;
            }
        }
    }
out:
    free(key);
    free(head);
    free(nxt);
    free(prv);
    free(stamp);
    free(buf);
    free(done);
    return status;
}

/* recolor._drop_class: one attempt at a proper k - 1 coloring without class `drop`, by tabu search on the region
 * within `radius` conflict hops of the class.  info receives (success, region size, work units); on success new
 * (nv) holds the renumbered colors.  Returns 0, or an error. */
SHS_EXPORT int64_t NAME(shs_drop_class)(int64_t nv, const IDX *ptr, const IDX *nbr, const IDX *optr, const IDX *onbr,
                                        int d2, const int32_t *colors, int64_t k, int64_t drop, int64_t radius,
                                        int64_t max_region, int64_t max_iter, int64_t max_work, int64_t work_per_edge,
                                        int64_t seed, int32_t *new, int64_t *info)
{
    shs_rng rng;
    int64_t work = 0, s = 0, nr = 0, lo = 0, kk = k - 1, f2 = 0, f, best_f, nconf = 0, status = 0;
    int32_t *stamp = shs_alloc(nv, sizeof(int32_t), 1), *buf = shs_alloc(imax(nv, 1), sizeof(int32_t), 0);
    int32_t *loc = shs_alloc(nv, sizeof(int32_t), 0), *region = shs_alloc(imax(nv, 1), sizeof(int32_t), 0);
    int64_t *aptr = NULL, *cnt_c = NULL, *col = NULL, *where = NULL, *conf = NULL;
    int32_t *adj = NULL, *gamma = NULL, *tabu = NULL;
    if (!stamp || !buf || !loc || !region) {
        status = SHS_NO_MEMORY;
        goto out;
    }
    rng_seed(&rng, (uint32_t)seed);
    for (int64_t v = 0; v < nv; v++)
        loc[v] = -1;
    for (int64_t v = 0; v < nv; v++)
        if (colors[v] == drop) {
            loc[v] = (int32_t)nr;
            region[nr++] = (int32_t)v;
        }
    if (radius < 0) /* the whole graph */
        for (int64_t v = 0; v < nv; v++)
            if (loc[v] < 0) {
                loc[v] = (int32_t)nr;
                region[nr++] = (int32_t)v;
            }
    for (int64_t step = 0; step < imax(radius, 0); step++) {
        int64_t hi = nr;
        for (int64_t i = lo; i < hi; i++) {
            int64_t cnt;
            s += 1;
            cnt = NAME(collect32)(region[i], ptr, nbr, optr, onbr, d2, stamp, s, buf);
            work += cnt;
            for (int64_t j = 0; j < cnt; j++) {
                int64_t x = buf[j];
                if (loc[x] < 0 && nr < max_region) {
                    loc[x] = (int32_t)nr;
                    region[nr++] = (int32_t)x;
                }
            }
        }
        lo = hi;
    }
    /* the region's conflict adjacency (global vertex ids; neighbours outside the region are fixed) */
    aptr = shs_alloc(nr + 1, sizeof(int64_t), 1);
    if (!aptr) {
        status = SHS_NO_MEMORY;
        goto out;
    }
    for (int64_t i = 0; i < nr; i++) {
        s += 1;
        aptr[i + 1] = aptr[i] + NAME(collect32)(region[i], ptr, nbr, optr, onbr, d2, stamp, s, buf);
    }
    adj = shs_alloc(aptr[nr], sizeof(int32_t), 0);
    if (!adj) {
        status = SHS_NO_MEMORY;
        goto out;
    }
    for (int64_t i = 0; i < nr; i++) {
        int64_t cnt;
        s += 1;
        cnt = NAME(collect32)(region[i], ptr, nbr, optr, onbr, d2, stamp, s, buf);
        for (int64_t j = 0; j < cnt; j++)
            adj[aptr[i] + j] = buf[j];
    }
    work += 2 * aptr[nr];
    if (max_iter < 0)
        max_iter = 2 * nr + 10000;
    if (work_per_edge > 0) {
        int64_t cap = work + 1000000 + work_per_edge * aptr[nr];
        if (cap < max_work)
            max_work = cap;
    }
    /* colors in the new numbering; the dropped class takes, vertex by vertex, its least used neighbour color */
    for (int64_t v = 0; v < nv; v++) {
        int64_t c = colors[v];
        new[v] = (int32_t)(c > drop ? c - 1 : c);
    }
    cnt_c = shs_alloc(kk, sizeof(int64_t), 1);
    col = shs_alloc(nr, sizeof(int64_t), 0);
    if (!cnt_c || !col) {
        status = SHS_NO_MEMORY;
        goto out;
    }
    for (int64_t i = 0; i < nr; i++) {
        int64_t v = region[i], arg = 0;
        if (colors[v] != drop)
            continue;
        if (kk <= 0) { /* np.argmin of an empty array raises */
            status = SHS_NUMBA_RAISES;
            goto out;
        }
        for (int64_t c = 0; c < kk; c++)
            cnt_c[c] = 0;
        for (int64_t p = aptr[i]; p < aptr[i + 1]; p++) {
            int64_t u = adj[p];
            if (colors[u] != drop || loc[u] < i) /* a dropped neighbour counts once it has its new color */
                cnt_c[new[u]] += 1;
        }
        for (int64_t c = 1; c < kk; c++)
            if (cnt_c[c] < cnt_c[arg])
                arg = c;
        new[v] = (int32_t)arg;
    }
    for (int64_t i = 0; i < nr; i++)
        col[i] = new[region[i]];
    gamma = shs_alloc(nr * kk, sizeof(int32_t), 1); /* gamma[i, c]: neighbours of region vertex i with color c */
    where = shs_alloc(nr, sizeof(int64_t), 0);
    conf = shs_alloc(imax(nr, 1), sizeof(int64_t), 0);
    tabu = shs_alloc(nr * kk, sizeof(int32_t), 1); /* the move until which (vertex, color) is tabu */
    if (!gamma || !where || !conf || !tabu) {
        status = SHS_NO_MEMORY;
        goto out;
    }
    for (int64_t i = 0; i < nr; i++)
        for (int64_t p = aptr[i]; p < aptr[i + 1]; p++)
            gamma[i * kk + new[adj[p]]] += 1;
    for (int64_t i = 0; i < nr; i++)
        where[i] = -1;
    for (int64_t i = 0; i < nr; i++) { /* twice the conflicting edges inside the region, plus twice those to fixed vertices */
        if (gamma[i * kk + col[i]] > 0) {
            nconf = conflict_add(conf, where, nconf, i);
            for (int64_t p = aptr[i]; p < aptr[i + 1]; p++) {
                int64_t u = adj[p];
                if (new[u] == col[i])
                    f2 += loc[u] < 0 ? 2 : 1;
            }
        }
    }
    f = f2 / 2;
    best_f = f;
    for (int64_t it = 0; it < max_iter; it++) {
        int64_t bi, bc, best_d, old, r;
        if (f == 0)
            break;
        work += nconf * (kk - 1);
        if (work > max_work)
            break;
        if (tabu_move(conf, nconf, col, gamma, kk, tabu, it, f, best_f, &rng, &bi, &bc, &best_d)) {
            status = SHS_NUMBA_RAISES;
            goto out;
        }
        old = col[bi];
        col[bi] = bc;
        new[region[bi]] = (int32_t)bc;
        f += best_d;
        for (int64_t p = aptr[bi]; p < aptr[bi + 1]; p++) {
            int64_t j = loc[adj[p]], cj;
            if (j < 0)
                continue;
            gamma[j * kk + old] -= 1;
            gamma[j * kk + bc] += 1;
            cj = col[j];
            if (cj == old && gamma[j * kk + old] == 0 && where[j] >= 0) /* j leaves the conflict list */
                nconf = conflict_remove(conf, where, nconf, j);
            else if (cj == bc && gamma[j * kk + bc] == 1 && where[j] < 0) /* j enters it */
                nconf = conflict_add(conf, where, nconf, j);
        }
        if (gamma[bi * kk + bc] == 0 && where[bi] >= 0)
            nconf = conflict_remove(conf, where, nconf, bi);
        else if (gamma[bi * kk + bc] > 0 && where[bi] < 0)
            nconf = conflict_add(conf, where, nconf, bi);
        if (rng_randint(&rng, 10, &r)) {
            status = SHS_NUMBA_RAISES;
            goto out;
        }
        tabu[bi * kk + old] = (int32_t)(it + 1 + r + (6 * nconf) / 10);
        if (f < best_f)
            best_f = f;
    }
    info[0] = f == 0;
    info[1] = nr;
    info[2] = work;
out:
    free(stamp);
    free(buf);
    free(loc);
    free(region);
    free(aptr);
    free(adj);
    free(cnt_c);
    free(col);
    free(gamma);
    free(where);
    free(conf);
    free(tabu);
    return status;
}

/* star._greedy_star: greedy star coloring of the adjacency graph (ptr, nbr) in `order` into colors (nv); returns
 * the number of colors. */
SHS_EXPORT int64_t NAME(shs_greedy_star)(int64_t nv, const IDX *ptr, const IDX *nbr, const int64_t *order,
                                         int32_t *colors)
{
    int64_t *forbidden = shs_alloc(nv + 1, sizeof(int64_t), 1), *count = shs_alloc(nv + 1, sizeof(int64_t), 1);
    int64_t *seen = shs_alloc(nv + 1, sizeof(int64_t), 1), k = 0;
    if (!forbidden || !count || !seen) {
        k = SHS_NO_MEMORY;
        goto out;
    }
    for (int64_t v = 0; v < nv; v++)
        colors[v] = -1;
    for (int64_t t = 0; t < nv; t++) {
        int64_t v = order[t], s = t + 1, c;
        for (int64_t p = ptr[v], pe = ptr[v + 1]; p < pe; p++) {
            int64_t cw = colors[nbr[p]];
            if (cw >= 0) {
                forbidden[cw] = s;
                if (seen[cw] != s) {
                    seen[cw] = s;
                    count[cw] = 0;
                }
                count[cw] += 1;
            }
        }
        for (int64_t p = ptr[v], pe = ptr[v + 1]; p < pe; p++) {
            int64_t w = nbr[p], cw = colors[w];
            if (cw < 0)
                continue;
            if (count[cw] >= 2) {
                /* rule 3: w and another neighbour of v share cw; v's color must differ from every colored
                 * neighbour y of w */
                for (int64_t q = ptr[w], qe = ptr[w + 1]; q < qe; q++) {
                    int64_t y = nbr[q];
                    if (y != v && colors[y] >= 0)
                        forbidden[colors[y]] = s;
                }
            }
            /* rule 2: v–w–x–y with color(y) == cw forbids color(x) */
            for (int64_t q = ptr[w], qe = ptr[w + 1]; q < qe; q++) {
                int64_t x = nbr[q], cx = colors[x];
                if (x == v || cx < 0 || forbidden[cx] == s)
                    continue;
                for (int64_t r = ptr[x], re = ptr[x + 1]; r < re; r++) {
                    int64_t y = nbr[r];
                    if (y != w && colors[y] == cw) {
                        forbidden[cx] = s;
                        break;
                    }
                }
            }
        }
        c = 0;
        while (forbidden[c] == s)
            c += 1;
        colors[v] = (int32_t)c;
        if (c >= k)
            k = c + 1;
    }
out:
    free(forbidden);
    free(count);
    free(seen);
    return k;
}
