/* SPDX-License-Identifier: Apache-2.0 */
/*
 * RLE / bit-packed hybrid encoder (Encodings.md, "Run Length Encoding /
 * Bit-Packing Hybrid").
 *
 * The input is a whole page's values, so the encoder can look ahead instead
 * of buffering: at each position it measures the run of equal values. A run
 * of 8 or more (or one that reaches the end of the input) becomes an RLE run:
 * header varint(len << 1), then the value in ceil(bit_width / 8) little-endian
 * bytes. Anything else starts a bit-packed run, which grows a group of 8
 * values at a time until a long run begins at a group boundary: header
 * varint(groups << 1 | 1), then the values packed LSB first. Only the last
 * group of the input may be short; it is padded with zeros, which readers
 * ignore because the page header gives the value count.
 */
#include "io/parquet/encode_rle.h"

int em_pq_bit_width(uint64_t max_value) {
    int w = 0;
    while (max_value) {
        w++;
        max_value >>= 1;
    }
    return w;
}

int64_t em_pq_rle_bound(int64_t n, int bit_width) {
    /* Worst case alternates short RLE runs and single bit-packed groups:
     * per 8 values at most bit_width bytes of data plus a 5-byte header. */
    return (n / 8 + 2) * (bit_width + 6) + 16;
}

/* Length of the run of equal values starting at i (capped at n - i). */
#define RUN_LENGTH(vals, i, n, out)                                                                \
    do {                                                                                           \
        int64_t j_ = (i) + 1;                                                                      \
        while (j_ < (n) && (vals)[j_] == (vals)[i])                                                \
            j_++;                                                                                  \
        (out) = j_ - (i);                                                                          \
    } while (0)

/* The encoder body, shared by the uint32 and uint8 inputs. */
#define RLE_ENCODE_BODY(vals, n, bw, out, err)                                                     \
    do {                                                                                           \
        EM_TRY(em_pq_wbuf_reserve((out), em_pq_rle_bound((n), (bw)), (err)));                      \
        uint8_t *p = em_pq_wbuf_tail(out);                                                         \
        int vbytes = ((bw) + 7) / 8;                                                               \
        int64_t i = 0;                                                                             \
        while (i < (n)) {                                                                          \
            int64_t run;                                                                           \
            RUN_LENGTH(vals, i, n, run);                                                           \
            if (run >= 8 || i + run == (n)) {                                                      \
                p += em_pq_put_uvarint(p, (uint64_t)run << 1);                                     \
                uint32_t v = (vals)[i];                                                            \
                for (int b = 0; b < vbytes; b++)                                                   \
                    *p++ = (uint8_t)(v >> (8 * b));                                                \
                i += run;                                                                          \
                continue;                                                                          \
            }                                                                                      \
            /* Bit-packed: take groups of 8 until a long run starts at a boundary.                 \
             */                                                                                    \
            int64_t start = i, end = i + 8;                                                        \
            while (end < (n)) {                                                                    \
                RUN_LENGTH(vals, end, n, run);                                                     \
                if (run >= 8)                                                                      \
                    break;                                                                         \
                end += 8;                                                                          \
            }                                                                                      \
            int64_t groups = (end - start) / 8;                                                    \
            p += em_pq_put_uvarint(p, (uint64_t)groups << 1 | 1);                                  \
            uint64_t acc = 0;                                                                      \
            int nbits = 0;                                                                         \
            for (int64_t k = start; k < end; k++) {                                                \
                uint64_t v = k < (n) ? (uint64_t)(vals)[k] : 0;                                    \
                acc |= v << nbits;                                                                 \
                nbits += (bw);                                                                     \
                while (nbits >= 8) {                                                               \
                    *p++ = (uint8_t)acc;                                                           \
                    acc >>= 8;                                                                     \
                    nbits -= 8;                                                                    \
                }                                                                                  \
            }                                                                                      \
            /* 8 values of bw bits fill whole bytes: nbits is 0 here. */                           \
            i = end;                                                                               \
        }                                                                                          \
        (out)->len = p - (out)->data;                                                              \
    } while (0)

em_status em_pq_rle_encode_u32(const uint32_t *vals, int64_t n, int bit_width, em_pq_wbuf *out,
                               em_error *err) {
    RLE_ENCODE_BODY(vals, n, bit_width, out, err);
    return EM_OK;
}

em_status em_pq_rle_encode_u8(const uint8_t *vals, int64_t n, int bit_width, em_pq_wbuf *out,
                              em_error *err) {
    RLE_ENCODE_BODY(vals, n, bit_width, out, err);
    return EM_OK;
}
