/* SPDX-License-Identifier: Apache-2.0 */
/*
 * TPC-H text (clause 4.2.2.10): a pool of pseudo-English built from the
 * specification's grammar, and the random strings cut from it.
 *
 *   sentence     = noun-phrase verb-phrase terminator
 *                | noun-phrase verb-phrase prep-phrase terminator
 *                | noun-phrase verb-phrase noun-phrase terminator
 *                | noun-phrase prep-phrase verb-phrase noun-phrase terminator
 *                | noun-phrase prep-phrase verb-phrase prep-phrase terminator
 *   noun-phrase  = noun | adjective noun | adjective, adjective noun
 *                | adverb adjective noun
 *   verb-phrase  = verb | auxiliary verb | verb adverb | auxiliary verb adverb
 *   prep-phrase  = preposition "the" noun-phrase
 *
 * Each choice is weighted as the specification's lists say (dists.c). Words
 * are separated by one space, the terminator and the comma of "adjective,
 * adjective" follow their word directly, and sentences are separated by one
 * space. The pool is filled to exactly TPCH_TEXT_POOL_BYTES (the last
 * sentence is cut), so every offset in [0, len - max] starts a valid
 * substring of max bytes.
 *
 * The pool depends only on the seed, never on the scale factor or threads.
 */
#include <string.h>

#include "io/tpch/tpch_internal.h"

typedef struct text_out {
    char *buf;
    int64_t len, cap;
    bool space; /* a space goes before the next word */
} text_out;

static void out_raw(text_out *o, const char *s) {
    size_t n = strlen(s);
    if (o->len + (int64_t)n > o->cap)
        n = (size_t)(o->cap - o->len);
    memcpy(o->buf + o->len, s, n);
    o->len += (int64_t)n;
}

static void out_word(text_out *o, const char *w) {
    if (o->space)
        out_raw(o, " ");
    out_raw(o, w);
    o->space = true;
}

static void out_pick(text_out *o, const tpch_dist *d, tpch_rng *g) {
    out_word(o, d->words[em_tpch_dist_pick(d, g)].text);
}

static void text_noun_phrase(text_out *o, tpch_rng *g) {
    for (const char *f = em_tpch_np.words[em_tpch_dist_pick(&em_tpch_np, g)].text; *f; f++) {
        switch (*f) {
        case 'N':
            out_pick(o, &em_tpch_nouns, g);
            break;
        case 'J':
            out_pick(o, &em_tpch_adjectives, g);
            break;
        case 'D':
            out_pick(o, &em_tpch_adverbs, g);
            break;
        case ',':
            out_raw(o, ",");
            break;
        default:
            break;
        }
    }
}

static void text_verb_phrase(text_out *o, tpch_rng *g) {
    for (const char *f = em_tpch_vp.words[em_tpch_dist_pick(&em_tpch_vp, g)].text; *f; f++) {
        switch (*f) {
        case 'V':
            out_pick(o, &em_tpch_verbs, g);
            break;
        case 'X':
            out_pick(o, &em_tpch_auxiliaries, g);
            break;
        case 'D':
            out_pick(o, &em_tpch_adverbs, g);
            break;
        default:
            break;
        }
    }
}

static void text_sentence(text_out *o, tpch_rng *g) {
    for (const char *f = em_tpch_grammar.words[em_tpch_dist_pick(&em_tpch_grammar, g)].text; *f; f++) {
        switch (*f) {
        case 'N':
            text_noun_phrase(o, g);
            break;
        case 'V':
            text_verb_phrase(o, g);
            break;
        case 'P':
            out_pick(o, &em_tpch_prepositions, g);
            out_word(o, "the");
            text_noun_phrase(o, g);
            break;
        case 'T':
            out_raw(o, em_tpch_terminators.words[em_tpch_dist_pick(&em_tpch_terminators, g)].text);
            break;
        default:
            break;
        }
    }
}

em_status em_tpch_text_pool_init(tpch_text_pool *p, uint64_t seed, em_error *err) {
    p->len = 0;
    p->text = em_pool_alloc(NULL, TPCH_TEXT_POOL_BYTES, err);
    if (!p->text)
        return err ? err->code : EM_ERR_NOMEM;
    text_out o = {p->text, 0, TPCH_TEXT_POOL_BYTES, false};
    tpch_rng g = tpch_rng_at(seed ^ TPCH_STREAM_TEXT, 0);
    while (o.len < o.cap)
        text_sentence(&o, &g);
    p->len = o.len;
    return EM_OK;
}

void em_tpch_text_pool_reset(tpch_text_pool *p) {
    if (p->text)
        em_pool_free(NULL, p->text, TPCH_TEXT_POOL_BYTES);
    p->text = NULL;
    p->len = 0;
}

const char *em_tpch_text(const tpch_text_pool *p, tpch_rng *g, int min, int max, int *len) {
    int64_t off = tpch_uniform(g, 0, p->len - max);
    *len = (int)tpch_uniform(g, min, max);
    return p->text + off;
}

/* 64 symbols, as the specification asks of v-strings (clause 4.2.2.7). */
static const char vstring_alphabet[65] =
    "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ,.";

int em_tpch_vstring(tpch_rng *g, int min, int max, char *buf) {
    int n = (int)tpch_uniform(g, min, max);
    /* One draw gives ten 6-bit symbols. */
    uint64_t bits = 0;
    int left = 0;
    for (int i = 0; i < n; i++) {
        if (left == 0) {
            bits = tpch_next(g);
            left = 10;
        }
        buf[i] = vstring_alphabet[bits & 63];
        bits >>= 6;
        left--;
    }
    return n;
}
