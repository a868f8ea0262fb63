# cython: boundscheck=False, wraparound=False, cdivision=True
"""Stable sort of fixed-width byte strings (Z-values) as unsigned bytes, left to right.

A most-significant-byte-first radix sort of row indices: each bucket is split by its
next byte (its next two bytes, into 65,536 buckets, from 131,072 rows) with a stable
counting sort into the other of two buffers, a byte that is the same in the whole bucket
costs one counting pass and no move, and small buckets finish with a stable insertion
sort. The next 8 bytes of each row travel with its index, so passes read in order.
Ties keep their input order. numpy has no stable sort on many-word keys that is fast
when the leading words tie (a lexsort of 4 words takes half a second for 1M rows);
Z-values tie on their leading bytes whenever columns have constant high bits, which is
the common case (small integers, timestamps of one year, strings with a shared prefix).

From ``PARALLEL_ROWS`` rows the first split is made apart (``_Split``): one pass finds
the first byte where rows differ (the bytes before it cost no counting pass), each of
``threads`` threads counts and scatters its own range of rows, and the buckets are then
sorted as above in runs of about equal rows, a run a thread. A stable sort has one
result, so the permutation is the same on any number of threads.
"""

cimport cython
from libc.stdint cimport int64_t, uint8_t, uint32_t, uint64_t
from libc.stdlib cimport calloc, free, malloc
from libc.string cimport memcmp, memcpy

from zorder.cpu.prefetch cimport prefetch

from time import thread_time

import numpy

from zorder.values.stages import add_helper_cpu

cdef enum:
    SMALL = 24     # insertion sort at or below this many rows
    BIG = 1 << 17  # from this many rows, split on two bytes at once (65,536 buckets)
    AHEAD = 16     # rows ahead whose next bytes are prefetched when the keys are reloaded
    PARALLEL_MIN = 1 << 18  # from this many rows, ``_Split``: the first split on threads
    MAX_THREADS = 64        # threads one sort uses at most (each keeps 65,537 counts)


#: Rows from which ``argsort_rows`` runs on its ``threads``.
PARALLEL_ROWS = PARALLEL_MIN


cdef inline uint64_t load_key(const uint8_t* row, Py_ssize_t avail) noexcept nogil:
    """Bytes row[0:8] as a big-endian word, zero-padded past `avail` bytes (the same
    padding for every row, so order is unchanged)."""
    cdef uint64_t k = 0
    cdef Py_ssize_t i
    if avail >= 8:
        for i in range(8):
            k = (k << 8) | row[i]
        return k
    for i in range(8):
        k <<= 8
        if i < avail:
            k |= row[i]
    return k


cdef inline bint greater(const uint8_t* z, Py_ssize_t stride, Py_ssize_t rest_at,
                         Py_ssize_t rest, int64_t a, uint64_t ka, int64_t b,
                         uint64_t kb) noexcept nogil:
    """Row a > row b, given their cached words; the bytes after them decide ties."""
    if ka != kb:
        return ka > kb
    if rest <= 0:
        return False
    return memcmp(z + a * stride + rest_at, z + b * stride + rest_at, rest) > 0


cdef inline void insertion(const uint8_t* z, Py_ssize_t stride, Py_ssize_t size,
                           Py_ssize_t cached, int64_t* idx, uint64_t* keys,
                           Py_ssize_t n) noexcept nogil:
    """Stable insertion sort of rows equal before `cached`, keyed by their cached words
    (bytes [cached, cached + 8)) and then by the bytes after them."""
    cdef Py_ssize_t i, j
    cdef Py_ssize_t rest_at = cached + 8
    cdef Py_ssize_t rest = size - rest_at
    cdef int64_t cur
    cdef uint64_t ck
    for i in range(1, n):
        cur = idx[i]
        ck = keys[i]
        j = i
        # Move only past strictly greater rows: stable.
        while j > 0 and greater(z, stride, rest_at, rest, idx[j - 1], keys[j - 1], cur, ck):
            idx[j] = idx[j - 1]
            keys[j] = keys[j - 1]
            j -= 1
        idx[j] = cur
        keys[j] = ck


cdef struct Sorter:
    const uint8_t* z
    Py_ssize_t stride
    Py_ssize_t size
    Py_ssize_t* counts     # 257 per depth: one live frame per depth at a time
    Py_ssize_t** wide      # per depth: 65,537 counts for a two-byte split, made on demand


cdef int sorter_init(Sorter* s, const uint8_t* z, Py_ssize_t stride,
                     Py_ssize_t size) noexcept nogil:
    """A Sorter for rows of ``size`` bytes ``stride`` apart from ``z``: 0 if out of memory
    (and nothing to free)."""
    s.z = z
    s.stride = stride
    s.size = size
    s.counts = <Py_ssize_t*>malloc(size * 257 * sizeof(Py_ssize_t))
    s.wide = <Py_ssize_t**>calloc(size, sizeof(Py_ssize_t*))
    if s.counts == NULL or s.wide == NULL:
        free(s.counts)
        free(s.wide)
        return 0
    return 1


cdef void sorter_free(Sorter* s) noexcept nogil:
    cdef Py_ssize_t i
    free(s.counts)
    for i in range(s.size):
        free(s.wide[i])
    free(s.wide)


cdef void msd(Sorter* s, int64_t* idx_a, uint64_t* keys_a, int64_t* idx_b,
              uint64_t* keys_b, Py_ssize_t n, Py_ssize_t depth, Py_ssize_t cached,
              bint in_a, bint want_a) noexcept nogil:
    """Sorts n rows (equal on bytes [0, depth)) held in buffer A (in_a) or B, leaving
    their indices in A (want_a) or B. keys cache bytes [cached, cached + 8) of each row,
    cached <= depth < cached + 8, and move along with the indices so each pass reads
    them in order; they are reloaded every 8 bytes. Each split scatters into the other
    buffer (no copy back); a finished bucket is copied once if it ended in the wrong one.
    """
    cdef Py_ssize_t i, big_start, big_total, step
    cdef int64_t* idx
    cdef uint64_t* keys
    while True:
        idx = idx_a if in_a else idx_b
        keys = keys_a if in_a else keys_b
        if n > 1 and depth < s.size:
            if depth - cached >= 8:
                # (rows in bucket order are random reads: fetched ahead, they overlap)
                cached = depth
                for i in range(n):
                    if i + AHEAD < n:
                        prefetch(s.z + idx[i + AHEAD] * s.stride + depth)
                    keys[i] = load_key(s.z + idx[i] * s.stride + depth, s.size - depth)
            if n <= SMALL:
                insertion(s.z, s.stride, s.size, cached, idx, keys, n)
                n = -n      # finished: fall through to the copy below
        if n <= 1 or depth >= s.size:
            if n < 0:
                n = -n
            if in_a != want_a:
                memcpy(idx_a if want_a else idx_b, idx, n * sizeof(int64_t))
            return
        # Split on the next two bytes at once (65,536 buckets) for a big bucket, else on
        # the next byte; a bucket of more than half the rows is left to this loop, the
        # others are sorted by calls: each then has at most half the rows, so calls nest
        # at most log2(n) deep whatever the data (one a byte split, they took 4,096 frames
        # on values of 4,096 bytes that split at every byte: more than a 512 KiB stack).
        step = 1
        if n >= BIG and depth - cached <= 6 and depth + 1 < s.size:
            if s.wide[depth] == NULL:
                s.wide[depth] = <Py_ssize_t*>malloc(65537 * sizeof(Py_ssize_t))
            if s.wide[depth] != NULL:
                step = 2
        if not split(s, idx_a, keys_a, idx_b, keys_b, n, depth, cached, in_a, want_a,
                     s.wide[depth] if step == 2 else s.counts + depth * 257, 8 * step,
                     &big_start, &big_total):
            depth += step   # one value there in the whole bucket: nothing to move
            continue
        # (the split's bucket of more than half the rows, if any)
        if big_total == 0:
            return
        idx_a += big_start
        keys_a += big_start
        idx_b += big_start
        keys_b += big_start
        n = big_total
        depth += step
        in_a = not in_a


cdef inline bint split(Sorter* s, int64_t* idx_a, uint64_t* keys_a, int64_t* idx_b,
                       uint64_t* keys_b, Py_ssize_t n, Py_ssize_t depth, Py_ssize_t cached,
                       bint in_a, bint want_a, Py_ssize_t* cnt, int bits,
                       Py_ssize_t* big_start, Py_ssize_t* big_total) noexcept nogil:
    """msd's split of n rows on their next ``bits`` (8 or 16) bits, at ``depth``, counted
    in ``cnt`` (2**bits + 1 entries): a stable counting sort into the other buffer. False
    (nothing done) when the whole bucket has one value there. Every bucket is sorted here
    but one of more than half the rows, whose start and row count are left in big_start,
    big_total for the caller (0 rows: none)."""
    cdef Py_ssize_t i, b, start, total, nonempty = 0
    cdef Py_ssize_t buckets = (<Py_ssize_t>1) << bits
    cdef uint64_t mask = buckets - 1
    cdef Py_ssize_t shift = 64 - bits - 8 * (depth - cached)
    cdef int64_t* idx = idx_a if in_a else idx_b
    cdef uint64_t* keys = keys_a if in_a else keys_b
    cdef int64_t* out_idx = idx_b if in_a else idx_a
    cdef uint64_t* out_keys = keys_b if in_a else keys_a
    for b in range(buckets + 1):
        cnt[b] = 0
    for i in range(n):
        cnt[((keys[i] >> shift) & mask) + 1] += 1
    for b in range(1, buckets + 1):
        if cnt[b]:
            nonempty += 1
            if nonempty > 1:
                break
    if nonempty == 1:
        return False
    for b in range(1, buckets + 1):
        cnt[b] += cnt[b - 1]
    # cnt[v] is where bucket v starts: scatter stably into the other buffer.
    for i in range(n):
        b = (keys[i] >> shift) & mask
        out_idx[cnt[b]] = idx[i]
        out_keys[cnt[b]] = keys[i]
        cnt[b] += 1
    # cnt[v] is now where bucket v ends.
    start = 0
    big_start[0] = 0
    big_total[0] = 0
    for b in range(buckets):
        total = cnt[b] - start
        if total > n // 2:
            big_start[0] = start
            big_total[0] = total
        elif total >= 1:
            msd(s, idx_a + start, keys_a + start, idx_b + start, keys_b + start,
                total, depth + bits // 8, cached, not in_a, want_a)
        start = cnt[b]
    return True


cdef inline void sort_buckets(Sorter* s, int64_t* idx_a, uint64_t* keys_a, int64_t* idx_b,
                              uint64_t* keys_b, const Py_ssize_t* ends, Py_ssize_t first,
                              Py_ssize_t last, Py_ssize_t depth, Py_ssize_t cached,
                              bint in_a, bint want_a) noexcept nogil:
    """msd of each bucket ``first`` to ``last`` - 1 of a scatter (its rows in A if
    ``in_a``), bucket b ending at ends[b], the one before the first at ends[first - 1]."""
    cdef Py_ssize_t b, total, start = ends[first - 1] if first > 0 else 0
    for b in range(first, last):
        total = ends[b] - start
        if total >= 1:
            msd(s, idx_a + start, keys_a + start, idx_b + start, keys_b + start,
                total, depth, cached, in_a, want_a)
        start = ends[b]


cdef inline int leading_zeros(uint64_t x) noexcept nogil:
    cdef int k = 0
    while not (x >> 63):
        x <<= 1
        k += 1
    return k


@cython.internal
cdef class _Split:
    """A parallel ``argsort_rows``: the first split that tells rows apart made by every
    thread on its own range of rows (a stable counting sort: thread t's rows of a bucket
    go after those of the threads before it), then its buckets sorted by ``msd`` in runs
    of about equal rows, a run a thread, each with a Sorter of its own."""
    cdef const uint8_t* z
    cdef Py_ssize_t stride, size, n, parts
    cdef int64_t* idx_a
    cdef uint64_t* keys_a
    cdef int64_t* idx_b
    cdef uint64_t* keys_b
    cdef Py_ssize_t* counts   # parts x (65,536 + 1): a range's count of each bucket, then
                              # where its next row of that bucket goes
    cdef Py_ssize_t* ends     # where each bucket ends
    cdef uint64_t* varying    # per range: the bits its keys do not share with row 0's
    cdef Py_ssize_t depth, cached, bits

    def __dealloc__(self):
        free(self.counts)
        free(self.ends)
        free(self.varying)

    cdef inline Py_ssize_t lo(self, Py_ssize_t part) noexcept nogil:
        return self.n * part // self.parts

    def load(self, Py_ssize_t part):
        """Keys of the range's rows (in their input order, still) at ``cached``, and the
        bits where they differ from row 0's."""
        cdef Py_ssize_t i, hi = self.lo(part + 1), avail = self.size - self.cached
        cdef uint64_t first, key, varying = 0
        with nogil:
            first = load_key(self.z + self.cached, avail)
            for i in range(self.lo(part), hi):
                key = load_key(self.z + i * self.stride + self.cached, avail)
                self.keys_a[i] = key
                varying |= key ^ first
            self.varying[part] = varying

    def count(self, Py_ssize_t part):
        cdef Py_ssize_t i, hi = self.lo(part + 1)
        cdef Py_ssize_t* cnt = self.counts + part * 65537
        cdef Py_ssize_t shift = 64 - self.bits - 8 * (self.depth - self.cached)
        cdef uint64_t mask = ((<uint64_t>1) << self.bits) - 1
        with nogil:
            for i in range((<Py_ssize_t>1) << self.bits):
                cnt[i] = 0
            for i in range(self.lo(part), hi):
                cnt[(self.keys_a[i] >> shift) & mask] += 1

    def scatter(self, Py_ssize_t part):
        cdef Py_ssize_t i, j, b, hi = self.lo(part + 1)
        cdef Py_ssize_t* cnt = self.counts + part * 65537
        cdef Py_ssize_t shift = 64 - self.bits - 8 * (self.depth - self.cached)
        cdef uint64_t mask = ((<uint64_t>1) << self.bits) - 1
        with nogil:
            for i in range(self.lo(part), hi):
                b = (self.keys_a[i] >> shift) & mask
                j = cnt[b]
                self.idx_b[j] = self.idx_a[i]
                self.keys_b[j] = self.keys_a[i]
                cnt[b] = j + 1

    def run(self, Py_ssize_t first, Py_ssize_t last):
        """Sorts buckets ``first`` to ``last`` - 1, leaving their rows' indices in A."""
        cdef Sorter s
        if not sorter_init(&s, self.z, self.stride, self.size):
            raise MemoryError()
        with nogil:
            sort_buckets(&s, self.idx_a, self.keys_a, self.idx_b, self.keys_b, self.ends,
                         first, last, self.depth + self.bits // 8, self.cached, False, True)
        sorter_free(&s)

    cdef bint find_split(self) noexcept nogil:
        """From the ranges' ``varying``: the first byte where rows differ in the cached
        window (``depth``) and how many bits to split on there, as msd would; False if
        they share the whole window."""
        cdef uint64_t varying = 0
        cdef Py_ssize_t part, first
        for part in range(self.parts):
            varying |= self.varying[part]
        if varying == 0:
            return False
        first = leading_zeros(varying) // 8
        self.depth = self.cached + first
        self.bits = 16 if first <= 6 and self.depth + 1 < self.size else 8
        return True

    cdef void place(self) noexcept nogil:
        """Counts to places: range t's first row of bucket b goes after every row of the
        buckets before b and the rows of b in the ranges before t."""
        cdef Py_ssize_t b, part, c, at = 0
        for b in range((<Py_ssize_t>1) << self.bits):
            for part in range(self.parts):
                c = self.counts[part * 65537 + b]
                self.counts[part * 65537 + b] = at
                at += c
            self.ends[b] = at

    def cuts(self):
        """Bucket numbers that cut the rows into ``parts`` runs of about equal rows: each
        cut before or after the bucket that holds its share's end, whichever is nearer."""
        cdef Py_ssize_t count = (<Py_ssize_t>1) << self.bits, b = 0, k, target, before
        out = [0]
        for k in range(1, self.parts):
            target = self.n * k
            while b < count and self.ends[b] * self.parts < target:
                b += 1
            before = self.ends[b - 1] * self.parts if b > 0 else 0
            if b < count and self.ends[b] * self.parts - target < target - before:
                b += 1
            out.append(b)
        out.append(count)
        return out


cdef _on_threads(const uint8_t* z, Py_ssize_t stride, Py_ssize_t size, int64_t* idx_a,
                 uint64_t* keys_a, int64_t* idx_b, uint64_t* keys_b, Py_ssize_t n,
                 Py_ssize_t threads, pool):
    """argsort_rows' msd on ``threads`` threads (``_Split``), this one and ``pool``'s;
    idx_a holds 0..n-1."""
    cdef _Split job = _Split()
    job.z, job.stride, job.size, job.n, job.parts = z, stride, size, n, threads
    job.idx_a, job.keys_a, job.idx_b, job.keys_b = idx_a, keys_a, idx_b, keys_b
    job.counts = <Py_ssize_t*>malloc(threads * 65537 * sizeof(Py_ssize_t))
    job.ends = <Py_ssize_t*>malloc(65537 * sizeof(Py_ssize_t))
    job.varying = <uint64_t*>malloc(threads * sizeof(uint64_t))
    if job.counts == NULL or job.ends == NULL or job.varying == NULL:
        raise MemoryError()

    helpers = [0.0]   # the pool's threads' CPU seconds, for --profile

    def each(calls):
        # the first call here, the others on the pool's threads (or here as well where
        # the pool can start none: at interpreter shutdown)
        jobs = []
        for call in calls[1:]:
            try:
                jobs.append(pool.submit(_with_cpu, call))
            except RuntimeError:
                call[0](*call[1:])
        calls[0][0](*calls[0][1:])
        for done in jobs:
            helpers[0] += done.result()

    parts = range(threads)
    job.cached = 0
    try:
        while True:
            each([(job.load, part) for part in parts])
            if job.find_split():
                break
            job.cached += 8
            if job.cached >= size:
                return   # every row equal: the identity, in A
        each([(job.count, part) for part in parts])
        job.place()
        each([(job.scatter, part) for part in parts])
        cuts = job.cuts()
        each([(job.run, a, b) for a, b in zip(cuts, cuts[1:]) if a < b])
    finally:
        add_helper_cpu(helpers[0])


def _with_cpu(call):
    """Run ``call`` (a function and its arguments); the CPU seconds it took here."""
    start = thread_time()
    call[0](*call[1:])
    return thread_time() - start


def _thread_pool(Py_ssize_t workers):
    """A pool of ``workers`` threads, or None where none can start (at interpreter
    shutdown even the import fails)."""
    try:
        from concurrent.futures import ThreadPoolExecutor
        return ThreadPoolExecutor(workers)
    except RuntimeError:
        return None


def rows_scratch(Py_ssize_t n):
    """The four arrays of n 8-byte words ``argsort_rows`` works in, each page written
    once: made ahead, on a thread with nothing else to do, they spare the sort the first
    touch of 32 bytes a row of fresh memory (in a VM that can cost more than the sort)."""
    arrays = (numpy.empty(n, dtype=numpy.int64), numpy.empty(n, dtype=numpy.int64),
              numpy.empty(n, dtype=numpy.uint64), numpy.empty(n, dtype=numpy.uint64))
    for a in arrays:
        a.view(numpy.uint8)[::4096] = 0
    return arrays


def argsort_rows(const uint8_t[:, :] values, scratch=None, Py_ssize_t threads=1):
    """Stable argsort (int64) of the rows of a 2-D uint8 array, bytewise unsigned.

    Rows must have contiguous bytes (any row stride). ``scratch``: ``rows_scratch(n)``
    of at least the rows' count, or None; the result is its first array's first n.
    ``threads``: from ``PARALLEL_ROWS`` rows, the first split that tells rows apart is
    made on this many threads (at most 64), and its buckets sorted in runs of about equal
    rows, a run a thread: the same permutation as on one.
    """
    cdef Py_ssize_t n = values.shape[0], size = values.shape[1]
    if threads < 1:
        raise ValueError(f"threads must be >= 1, got {threads}")
    if scratch is None:
        perm = numpy.arange(n, dtype=numpy.int64)
    else:
        if (len(scratch) != 4 or any(a.ndim != 1 or a.shape[0] < n or a.dtype.itemsize != 8
                                     or not a.flags.c_contiguous or not a.flags.writeable
                                     for a in scratch)):
            raise ValueError("scratch: four writable 1-D arrays of 8-byte words of at "
                             "least the rows' count (rows_scratch)")
        perm = scratch[0][:n].view(numpy.int64)
        perm[:] = numpy.arange(n, dtype=numpy.int64)
    if n <= 1 or size == 0:
        return perm
    if size > 1 and values.strides[1] != 1:
        raise ValueError("rows must have contiguous bytes")
    cdef int64_t[::1] p = perm
    tmp = numpy.empty(n, dtype=numpy.int64) if scratch is None else scratch[1][:n].view(numpy.int64)
    cdef int64_t[::1] t = tmp
    key_arr = numpy.empty(n, dtype=numpy.uint64) if scratch is None else scratch[2][:n].view(numpy.uint64)
    tmp_key_arr = numpy.empty(n, dtype=numpy.uint64) if scratch is None else scratch[3][:n].view(numpy.uint64)
    cdef uint64_t[::1] keys = key_arr
    cdef uint64_t[::1] tkeys = tmp_key_arr
    cdef Sorter s
    threads = min(threads, MAX_THREADS)
    pool = _thread_pool(threads - 1) if threads > 1 and n >= PARALLEL_MIN else None
    if pool is not None:
        with pool:
            _on_threads(&values[0, 0], values.strides[0], size, &p[0], &keys[0], &t[0],
                        &tkeys[0], n, threads, pool)
        return perm
    if not sorter_init(&s, &values[0, 0], values.strides[0], size):
        raise MemoryError()
    with nogil:
        # cached = -8 makes the first pass load bytes [0, 8) of every row.
        msd(&s, &p[0], &keys[0], &t[0], &tkeys[0], n, 0, -8, True, True)
    sorter_free(&s)
    return perm


cdef enum:
    DIGIT_BITS = 11   # 2,048 buckets: the counters stay in L1, the scatter streams in L2
    ONE_PASS_BITS = 16  # up to this many varying bits, one pass into 65,536 buckets wins


def argsort_short(const uint8_t[:, :] values):
    """Stable argsort (int64) of rows of at most 4 bytes, bytewise unsigned.

    A least-significant-digit radix sort of (key, row) pairs over only the bits that vary
    (the span from the lowest to the highest bit that differs between rows), in 11-bit
    digits: two 16-bit ranks take three passes, and a key that is constant costs one
    reading pass. Up to 16 varying bits sort in one pass. All digit histograms come from
    one pass over the keys. Measured against the MSD radix sort and numpy's sort of packed
    (key, row) words in benchmarks/NOTES.md.
    """
    cdef Py_ssize_t n = values.shape[0], size = values.shape[1]
    if size > 4:
        raise ValueError(f"values: rows of at most 4 bytes, not {size}")
    perm = numpy.arange(n, dtype=numpy.int64)
    if n <= 1 or size == 0:
        return perm
    if size > 1 and values.strides[1] != 1:
        raise ValueError("rows must have contiguous bytes")
    if n >= 2**32:
        raise ValueError(f"values: at most 2**32 - 1 rows, not {n}")
    key_a = numpy.empty(n, dtype=numpy.uint32)
    key_b = numpy.empty(n, dtype=numpy.uint32)
    row_a = numpy.empty(n, dtype=numpy.uint32)
    row_b = numpy.empty(n, dtype=numpy.uint32)
    cdef uint32_t[::1] ka = key_a, kb = key_b, ra = row_a, rb = row_b
    cdef int64_t[::1] p = perm
    cdef const uint8_t* z = &values[0, 0]
    cdef Py_ssize_t stride = values.strides[0]
    cdef Py_ssize_t i, j, d, npass = 0
    cdef uint32_t k, first, varying = 0, mask
    cdef int low = 0, high = 0, digit
    cdef int shifts[3]
    cdef Py_ssize_t* counts
    cdef Py_ssize_t total, c
    cdef uint32_t* src_k
    cdef uint32_t* dst_k
    cdef uint32_t* src_r
    cdef uint32_t* dst_r
    counts = <Py_ssize_t*>calloc(max(1 << ONE_PASS_BITS, 3 << DIGIT_BITS), sizeof(Py_ssize_t))
    if counts == NULL:
        raise MemoryError()
    try:
        with nogil:
            for i in range(n):
                k = 0
                for j in range(size):
                    k = (k << 8) | z[i * stride + j]
                ka[i] = k
            first = ka[0]
            for i in range(n):
                varying |= ka[i] ^ first
            if varying == 0:
                pass  # every row equal: the identity is the stable order
            else:
                while not (varying >> low) & 1:
                    low += 1
                high = 32
                while not (varying >> (high - 1)) & 1:
                    high -= 1
                # Digits of equal width (at most 11 bits) over the varying span.
                npass = 1 if high - low <= ONE_PASS_BITS else (high - low + DIGIT_BITS - 1) // DIGIT_BITS
                digit = (high - low + npass - 1) // npass
                mask = (1u << digit) - 1
                for d in range(npass):
                    shifts[d] = low + d * digit
                for i in range(n):
                    k = ka[i]
                    for d in range(npass):
                        counts[(d << digit) + ((k >> shifts[d]) & mask)] += 1
                for d in range(npass):
                    total = 0
                    for j in range(d << digit, (d + 1) << digit):
                        c = counts[j]
                        counts[j] = total
                        total += c
                src_k, dst_k = &ka[0], &kb[0]
                src_r, dst_r = &ra[0], &rb[0]
                for d in range(npass):
                    if d + 1 == npass:
                        # The last pass writes the permutation itself.
                        for i in range(n):
                            k = src_k[i]
                            c = (d << digit) + ((k >> shifts[d]) & mask)
                            j = counts[c]
                            counts[c] = j + 1
                            p[j] = i if d == 0 else src_r[i]
                    else:
                        for i in range(n):
                            k = src_k[i]
                            c = (d << digit) + ((k >> shifts[d]) & mask)
                            j = counts[c]
                            counts[c] = j + 1
                            dst_k[j] = k
                            dst_r[j] = <uint32_t>i if d == 0 else src_r[i]
                        src_k, dst_k = dst_k, src_k
                        src_r, dst_r = dst_r, src_r
    finally:
        free(counts)
    return perm
