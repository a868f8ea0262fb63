/* BMI2 backend: _pdep_u64 deposits a byte's bits straight into their output positions.
 *
 * This file holds the only BMI2 instructions in zorder, each function marked with
 * target("bmi2") instead of compiling the file with -mbmi2, so nothing outside these
 * functions (the module's import included) can ever use them. _pdep.pyx calls in only
 * after CPUID says BMI2 is there. */
#include "_pdep_kernel.h"
#include "_cpuid.h"

#if ZORDER_X86_64 && (defined(__GNUC__) || defined(__clang__) || defined(_MSC_VER))
#include <immintrin.h>

#if defined(__GNUC__) || defined(__clang__)
#define ZORDER_TARGET_BMI2 __attribute__((target("bmi2")))
#else
#define ZORDER_TARGET_BMI2
#endif

const int zorder_pdep_built = 1;

/* MASK[k]: where column 0's byte goes in a k-column group (bits 8k-1, 8k-1-k, ..., k-1);
 * column t uses MASK[k] >> t. Filled once by zorder_pdep_init. */
static uint64_t MASK[ZORDER_MAX_GROUP + 1];

void zorder_pdep_init(void)
{
    int k, i;
    for (k = 1; k <= ZORDER_MAX_GROUP; k++) {
        uint64_t m = 0;
        for (i = 0; i < 8; i++)
            m |= (uint64_t)1 << (8 * k - 1 - i * k);
        MASK[k] = m;
    }
}

ZORDER_TARGET_BMI2
int zorder_pdep_rows(const zorder_column *cols, ptrdiff_t ncols, ptrdiff_t size,
                     ptrdiff_t nrows, uint8_t *out, ptrdiff_t out_stride)
{
    zorder_plan plan;
    ptrdiff_t r, j, pos, nbytes;
    int s, k, t;
    if (!zorder_make_plan(cols, ncols, &plan))
        return 0;
    for (r = 0; r < nrows; r++) {
        uint8_t *dst = out + r * out_stride;
        pos = 0;
        for (s = 0; s < plan.nsegments && pos < size; s++) {
            const int *idx = plan.seg_cols[s];
            k = plan.seg_k[s];
            for (j = plan.seg_start[s]; j < plan.seg_end[s] && pos < size; j++) {
                uint64_t w = 0;
                for (t = 0; t < k; t++) {
                    const zorder_column *c = &cols[idx[t]];
                    w |= _pdep_u64(c->data[r * c->row_stride + j], MASK[k] >> t);
                }
                nbytes = size - pos < k ? size - pos : k;
                zorder_store_group(dst + pos, w, k, nbytes);
                pos += nbytes;
            }
        }
    }
    return 1;
}

#else

const int zorder_pdep_built = 0;

void zorder_pdep_init(void) {}

int zorder_pdep_rows(const zorder_column *cols, ptrdiff_t ncols, ptrdiff_t size,
                     ptrdiff_t nrows, uint8_t *out, ptrdiff_t out_stride)
{
    (void)cols; (void)ncols; (void)size; (void)nrows; (void)out; (void)out_stride;
    return 0;
}

#endif
