/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The TPC-H value domains: the word lists of the text grammar with their
 * weights, the uniform lists (colors, types, containers, segments, priorities,
 * ship instructions and modes), and the fixed nation and region rows, as the
 * TPC-H specification (clause 4.2.2.13, 4.2.3) lists them.
 *
 * A weighted list is picked by drawing a uniform weight unit in [0, total)
 * and walking the cumulative weights; the lists are short (at most 47 words),
 * so the walk costs less than a lookup table would in cache misses. `total`
 * is stated beside each list and checked against the weights by a unit test.
 *
 * Dates are days since 1970-01-01 computed with the civil-from-days identity
 * for the proleptic Gregorian calendar (the calendar Spark uses for DATE).
 */
#include "io/tpch/tpch_internal.h"

#define N_OF(a) ((int)(sizeof(a) / sizeof((a)[0])))

static const tpch_word nouns[] = {
    {"packages", 40},      {"requests", 40},     {"accounts", 40},    {"deposits", 40},
    {"foxes", 20},         {"ideas", 20},        {"theodolites", 20}, {"pinto beans", 20},
    {"instructions", 20},  {"dependencies", 10}, {"excuses", 10},     {"platelets", 10},
    {"asymptotes", 10},    {"courts", 5},        {"dolphins", 5},     {"multipliers", 1},
    {"sauternes", 1},      {"warthogs", 1},      {"frets", 1},        {"dinos", 1},
    {"attainments", 1},    {"somas", 1},         {"Tiresias", 1},     {"patterns", 1},
    {"forges", 1},         {"braids", 1},        {"frays", 1},        {"warhorses", 1},
    {"dugouts", 1},        {"notornis", 1},      {"epitaphs", 1},     {"pearls", 1},
    {"tithes", 1},         {"waters", 1},        {"orbits", 1},       {"gifts", 1},
    {"sheaves", 1},        {"depths", 1},        {"sentiments", 1},   {"decoys", 1},
    {"realms", 1},         {"pains", 1},         {"grouches", 1},     {"escapades", 1},
    {"hockey players", 1},
};

static const tpch_word verbs[] = {
    {"sleep", 20},    {"wake", 20},    {"are", 20},   {"cajole", 20}, {"haggle", 20},
    {"nag", 10},      {"use", 10},     {"boost", 10}, {"affix", 5},   {"detect", 5},
    {"integrate", 5}, {"maintain", 1}, {"nod", 1},    {"was", 1},     {"lose", 1},
    {"sublate", 1},   {"solve", 1},    {"thrash", 1}, {"promise", 1}, {"engage", 1},
    {"hinder", 1},    {"print", 1},    {"x-ray", 1},  {"breach", 1},  {"eat", 1},
    {"grow", 1},      {"impress", 1},  {"mold", 1},   {"poach", 1},   {"serve", 1},
    {"run", 1},       {"dazzle", 1},   {"snooze", 1}, {"doze", 1},    {"unwind", 1},
    {"kindle", 1},    {"play", 1},     {"hang", 1},   {"believe", 1}, {"doubt", 1},
};

static const tpch_word adjectives[] = {
    {"special", 20}, {"pending", 20}, {"unusual", 20}, {"express", 20}, {"furious", 1},
    {"sly", 1},      {"careful", 1},  {"blithe", 1},   {"quick", 1},    {"fluffy", 1},
    {"slow", 1},     {"quiet", 1},    {"ruthless", 1}, {"thin", 1},     {"close", 1},
    {"dogged", 1},   {"daring", 1},   {"brave", 1},    {"stealthy", 1}, {"permanent", 1},
    {"enticing", 1}, {"idle", 1},     {"busy", 1},     {"regular", 50}, {"final", 40},
    {"ironic", 40},  {"even", 30},    {"bold", 20},    {"silent", 10},
};

static const tpch_word adverbs[] = {
    {"sometimes", 1},  {"always", 1},     {"never", 1},      {"furiously", 50},  {"slyly", 50},
    {"carefully", 50}, {"blithely", 40},  {"quickly", 30},   {"fluffily", 20},   {"slowly", 1},
    {"quietly", 1},    {"ruthlessly", 1}, {"thinly", 1},     {"closely", 1},     {"doggedly", 1},
    {"daringly", 1},   {"bravely", 1},    {"stealthily", 1}, {"permanently", 1}, {"enticingly", 1},
    {"idly", 1},       {"busily", 1},     {"regularly", 1},  {"finally", 1},     {"ironically", 1},
    {"evenly", 1},     {"boldly", 1},     {"silently", 1},
};

static const tpch_word prepositions[] = {
    {"about", 50},
    {"above", 50},
    {"according to", 50},
    {"across", 50},
    {"after", 50},
    {"against", 40},
    {"along", 40},
    {"alongside of", 30},
    {"among", 30},
    {"around", 20},
    {"at", 10},
    {"atop", 1},
    {"before", 1},
    {"behind", 1},
    {"beneath", 1},
    {"beside", 1},
    {"besides", 1},
    {"between", 1},
    {"beyond", 1},
    {"by", 1},
    {"despite", 1},
    {"during", 1},
    {"except", 1},
    {"for", 1},
    {"from", 1},
    {"in place of", 1},
    {"inside", 1},
    {"instead of", 1},
    {"into", 1},
    {"near", 1},
    {"of", 1},
    {"on", 1},
    {"outside", 1},
    {"over", 1},
    {"past", 1},
    {"since", 1},
    {"through", 1},
    {"throughout", 1},
    {"to", 1},
    {"toward", 1},
    {"under", 1},
    {"until", 1},
    {"up", 1},
    {"upon", 1},
    {"without", 1},
    {"with", 1},
    {"within", 1},
};

static const tpch_word auxiliaries[] = {
    {"do", 1},
    {"may", 1},
    {"might", 1},
    {"shall", 1},
    {"will", 1},
    {"would", 1},
    {"can", 1},
    {"could", 1},
    {"should", 1},
    {"ought to", 1},
    {"must", 1},
    {"will have to", 1},
    {"shall have to", 1},
    {"could have to", 1},
    {"should have to", 1},
    {"must have to", 1},
    {"need to", 1},
    {"try to", 1},
};

static const tpch_word terminators[] = {
    {".", 50}, {";", 1}, {":", 1}, {"?", 1}, {"!", 1}, {"--", 1},
};

/* Sentence forms: N noun phrase, V verb phrase, P prepositional phrase, T
 * terminator. */
static const tpch_word grammar[] = {
    {"NVT", 3}, {"NVPT", 3}, {"NVNT", 3}, {"NPVNT", 1}, {"NPVPT", 1},
};
/* Noun phrases: N noun, J adjective, ',' a comma after the previous word, D
 * adverb. */
static const tpch_word np[] = {
    {"N", 10},
    {"JN", 20},
    {"J,JN", 10},
    {"DJN", 50},
};
/* Verb phrases: V verb, X auxiliary, D adverb. */
static const tpch_word vp[] = {
    {"V", 30},
    {"XV", 1},
    {"VD", 40},
    {"XVD", 1},
};

const tpch_dist em_tpch_nouns = {"nouns", nouns, N_OF(nouns), 340};
const tpch_dist em_tpch_verbs = {"verbs", verbs, N_OF(verbs), 174};
const tpch_dist em_tpch_adjectives = {"adjectives", adjectives, N_OF(adjectives), 289};
const tpch_dist em_tpch_adverbs = {"adverbs", adverbs, N_OF(adverbs), 262};
const tpch_dist em_tpch_prepositions = {"prepositions", prepositions, N_OF(prepositions), 456};
const tpch_dist em_tpch_auxiliaries = {"auxiliaries", auxiliaries, N_OF(auxiliaries), 18};
const tpch_dist em_tpch_terminators = {"terminators", terminators, N_OF(terminators), 55};
const tpch_dist em_tpch_grammar = {"grammar", grammar, N_OF(grammar), 11};
const tpch_dist em_tpch_np = {"np", np, N_OF(np), 90};
const tpch_dist em_tpch_vp = {"vp", vp, N_OF(vp), 72};

int em_tpch_dist_pick(const tpch_dist *d, tpch_rng *g) {
    int64_t w = tpch_uniform(g, 0, d->total - 1);
    for (int i = 0; i < d->n_words; i++) {
        w -= d->words[i].weight;
        if (w < 0)
            return i;
    }
    return d->n_words - 1;
}

const char *const em_tpch_colors[92] = {
    "almond",   "antique",   "aquamarine", "azure",      "beige",     "bisque",    "black",
    "blanched", "blue",      "blush",      "brown",      "burlywood", "burnished", "chartreuse",
    "chiffon",  "chocolate", "coral",      "cornflower", "cornsilk",  "cream",     "cyan",
    "dark",     "deep",      "dim",        "dodger",     "drab",      "firebrick", "floral",
    "forest",   "frosted",   "gainsboro",  "ghost",      "goldenrod", "green",     "grey",
    "honeydew", "hot",       "indian",     "ivory",      "khaki",     "lace",      "lavender",
    "lawn",     "lemon",     "light",      "lime",       "linen",     "magenta",   "maroon",
    "medium",   "metallic",  "midnight",   "mint",       "misty",     "moccasin",  "navajo",
    "navy",     "olive",     "orange",     "orchid",     "pale",      "papaya",    "peach",
    "peru",     "pink",      "plum",       "powder",     "puff",      "purple",    "red",
    "rose",     "rosy",      "royal",      "saddle",     "salmon",    "sandy",     "seashell",
    "sienna",   "sky",       "slate",      "smoke",      "snow",      "spring",    "steel",
    "tan",      "thistle",   "tomato",     "turquoise",  "violet",    "wheat",     "white",
    "yellow",
};

const char *const em_tpch_type_s1[6] = {"STANDARD", "SMALL", "MEDIUM", "LARGE", "ECONOMY", "PROMO"};
const char *const em_tpch_type_s2[5] = {"ANODIZED", "BURNISHED", "PLATED", "POLISHED", "BRUSHED"};
const char *const em_tpch_type_s3[5] = {"TIN", "NICKEL", "BRASS", "STEEL", "COPPER"};
const char *const em_tpch_container_s1[5] = {"SM", "LG", "MED", "JUMBO", "WRAP"};
const char *const em_tpch_container_s2[8] = {"CASE", "BOX",  "BAG", "JAR",
                                          "PKG",  "PACK", "CAN", "DRUM"};
const char *const em_tpch_segments[5] = {"AUTOMOBILE", "BUILDING", "FURNITURE", "MACHINERY",
                                      "HOUSEHOLD"};
const char *const em_tpch_priorities[5] = {"1-URGENT", "2-HIGH", "3-MEDIUM", "4-NOT SPECIFIED",
                                        "5-LOW"};
const char *const em_tpch_instructions[4] = {"DELIVER IN PERSON", "COLLECT COD", "NONE",
                                          "TAKE BACK RETURN"};
const char *const em_tpch_modes[7] = {"REG AIR", "AIR", "RAIL", "SHIP", "TRUCK", "MAIL", "FOB"};

const tpch_nation em_tpch_nations[25] = {
    {"ALGERIA", 0},       {"ARGENTINA", 1}, {"BRAZIL", 1}, {"CANADA", 1},
    {"EGYPT", 4},         {"ETHIOPIA", 0},  {"FRANCE", 3}, {"GERMANY", 3},
    {"INDIA", 2},         {"INDONESIA", 2}, {"IRAN", 4},   {"IRAQ", 4},
    {"JAPAN", 2},         {"JORDAN", 4},    {"KENYA", 0},  {"MOROCCO", 0},
    {"MOZAMBIQUE", 0},    {"PERU", 1},      {"CHINA", 2},  {"ROMANIA", 3},
    {"SAUDI ARABIA", 4},  {"VIETNAM", 2},   {"RUSSIA", 3}, {"UNITED KINGDOM", 3},
    {"UNITED STATES", 1},
};
const char *const em_tpch_regions[5] = {"AFRICA", "AMERICA", "ASIA", "EUROPE", "MIDDLE EAST"};

int32_t em_tpch_days(int y, int m, int d) {
    /* Shift the year to start in March so the leap day is the year's last day. */
    int64_t yy = m <= 2 ? y - 1 : y;
    int64_t era = (yy >= 0 ? yy : yy - 399) / 400;
    int64_t yoe = yy - era * 400;
    int64_t doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return (int32_t)(era * 146097 + doe - 719468);
}
