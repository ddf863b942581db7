/* ARQMath Posts.xml rows -> the Lucene baseline's index text, for the common case, in C.
 *
 * Why: the conversion in Python (lxml's parse, then mathtext.html_to_index_text) runs at
 * about 20 MB/s per core; Anserini indexes the result faster than that (issue 18). This
 * file does what both do, for rows it fully understands, in one pass per stage; every
 * other row is left to the Python code, which stays the reference:
 *
 *   - a row this code cannot vouch for as XML (a quote other than ", an entity it does not
 *     know, a control character, invalid UTF-8, a namespaced or duplicate attribute,
 *     anything between rows but blanks, ...) stops the scan; the caller parses from there
 *     with lxml (ST_STOP);
 *   - a row whose text needs what only html.unescape or the bare-$ step of
 *     html_to_index_text does (an HTML entity other than &amp; &lt; &gt; &quot; &nbsp; and
 *     &#32;..&#126;, a '$' left after the formula spans) is returned with its HTML, for
 *     html_to_index_text.
 *
 * For the rest it writes what lucene_baseline.arqmath.convert_range writes: the JSONL line
 * of each answer whose question came before it in the range (JSON-escaped as CPython's
 * encode_basestring_ascii does), and records for everything Python must see (the records
 * are described at st_convert_rows).
 *
 * The rules below are transcribed from those references, cited at each step: XML 1.0
 * (attribute-value normalisation, section 3.3.3; end-of-line handling, 2.11; Char, 2.2),
 * lucene_baseline/mathtext.py (the regexes _MATH_SPAN, _COMMAND, _TAG, _SYMBOL_WORDS,
 * _TO_SPACE), CPython's html.unescape, str.split and json (Lib/html/__init__.py,
 * Py_UNICODE_ISSPACE, Modules/_json.c). tests/test_baselines_postsconv.py compares both
 * paths on generated files.
 */
#define _GNU_SOURCE /* memmem */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum { ST_DONE = 0, ST_STOP = 1, ST_FULL = 2, ST_NOMEM = 3, ST_YIELD = 4 };
enum { OK = 0, PYTHON = 1 };

#define MAX_ATTRS 64
/* A row longer than this goes to lxml: bounds this code's scratch memory (7x a row). */
#define MAX_ROW (16u << 20)

typedef unsigned char uc;

typedef struct {
    uc *p;
    size_t n, cap;
} buf;

static int reserve(buf *b, size_t extra) {
    if (b->n + extra <= b->cap) return 1;
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < b->n + extra) cap *= 2;
    uc *p = realloc(b->p, cap);
    if (!p) return 0;
    b->p = p;
    b->cap = cap;
    return 1;
}

static inline void put(buf *b, const void *s, size_t n) {
    memcpy(b->p + b->n, s, n);
    b->n += n;
}

/* Bytes copied as they are: in an attribute value (XML_PLAIN), in text (TEXT_PLAIN). */
static uc XML_PLAIN[256], TEXT_PLAIN[256];

static inline int is_blank(uc c) { /* XML's S (2.3) */
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* Length of a valid UTF-8 sequence at s (n bytes left) that is an XML Char (2.2), or 0. */
static size_t utf8_char(const uc *s, size_t n) {
    uc c = s[0];
    if (c < 0xC2) return 0; /* continuation byte or overlong 2-byte lead */
    if (c < 0xE0) {
        if (n < 2 || (s[1] & 0xC0) != 0x80) return 0;
        return 2;
    }
    if (c < 0xF0) {
        if (n < 3 || (s[1] & 0xC0) != 0x80 || (s[2] & 0xC0) != 0x80) return 0;
        uint32_t cp = ((uint32_t)(c & 0x0F) << 12) | ((uint32_t)(s[1] & 0x3F) << 6) | (s[2] & 0x3F);
        if (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF) || cp == 0xFFFE || cp == 0xFFFF) return 0;
        return 3;
    }
    if (c < 0xF5) {
        if (n < 4 || (s[1] & 0xC0) != 0x80 || (s[2] & 0xC0) != 0x80 || (s[3] & 0xC0) != 0x80) return 0;
        uint32_t cp = ((uint32_t)(c & 0x07) << 18) | ((uint32_t)(s[1] & 0x3F) << 12) |
                      ((uint32_t)(s[2] & 0x3F) << 6) | (s[3] & 0x3F);
        if (cp < 0x10000 || cp > 0x10FFFF) return 0;
        return 4;
    }
    return 0;
}

static size_t put_utf8(uc *d, uint32_t cp) {
    if (cp < 0x80) { d[0] = (uc)cp; return 1; }
    if (cp < 0x800) { d[0] = (uc)(0xC0 | (cp >> 6)); d[1] = (uc)(0x80 | (cp & 0x3F)); return 2; }
    if (cp < 0x10000) {
        d[0] = (uc)(0xE0 | (cp >> 12)); d[1] = (uc)(0x80 | ((cp >> 6) & 0x3F)); d[2] = (uc)(0x80 | (cp & 0x3F));
        return 3;
    }
    d[0] = (uc)(0xF0 | (cp >> 18)); d[1] = (uc)(0x80 | ((cp >> 12) & 0x3F));
    d[2] = (uc)(0x80 | ((cp >> 6) & 0x3F)); d[3] = (uc)(0x80 | (cp & 0x3F));
    return 4;
}

static int xml_char(uint32_t cp) { /* XML 1.0 production [2] Char */
    return cp == 0x9 || cp == 0xA || cp == 0xD || (cp >= 0x20 && cp <= 0xD7FF) ||
           (cp >= 0xE000 && cp <= 0xFFFD) || (cp >= 0x10000 && cp <= 0x10FFFF);
}

/* s (n bytes) starts with the string literal lit (its length known at compile time) */
#define starts(s, n, lit) ((n) >= sizeof(lit) - 1 && memcmp((s), (lit), sizeof(lit) - 1) == 0)

/* An attribute value as the XML parser reports it: references replaced, literal blanks
 * normalised to spaces (3.3.3; a literal CR LF is one line end, 2.11). Writes at most n
 * bytes to d (d may be NULL to only check). Returns the length, or -1: not for this code. */
static long xml_value(const uc *s, size_t n, uc *d) {
    size_t i = 0, o = 0;
    while (i < n) {
        size_t run = i;
        while (i < n && XML_PLAIN[s[i]]) i++;
        if (i > run) {
            if (d) memcpy(d + o, s + run, i - run);
            o += i - run;
            if (i >= n) break;
        }
        uc c = s[i];
        if (c == '&') {
            const uc *e = s + i + 1;
            size_t left = n - i - 1;
            uint32_t cp;
            size_t used;
            uc e0 = left ? e[0] : 0; /* one test per entity on the way: they are much of a body */
            if (e0 == 'l' && starts(e, left, "lt;")) { cp = '<'; used = 3; }
            else if (e0 == 'g' && starts(e, left, "gt;")) { cp = '>'; used = 3; }
            else if (e0 == 'q' && starts(e, left, "quot;")) { cp = '"'; used = 5; }
            else if (e0 == 'a' && starts(e, left, "amp;")) { cp = '&'; used = 4; }
            else if (e0 == 'a' && starts(e, left, "apos;")) { cp = '\''; used = 5; }
            else if (left >= 3 && e0 == '#') {
                int hex = e[1] == 'x';
                size_t k = hex ? 2 : 1, digits = 0;
                cp = 0;
                while (k < left && e[k] != ';') {
                    uc h = e[k];
                    uint32_t v;
                    if (h >= '0' && h <= '9') v = h - '0';
                    else if (hex && h >= 'a' && h <= 'f') v = h - 'a' + 10;
                    else if (hex && h >= 'A' && h <= 'F') v = h - 'A' + 10;
                    else return -1;
                    cp = cp * (hex ? 16 : 10) + v;
                    if (cp > 0x10FFFF) return -1;
                    k++;
                    digits++;
                }
                if (k >= left || digits == 0 || !xml_char(cp)) return -1;
                used = k + 1;
            } else {
                return -1;
            }
            if (d) o += put_utf8(d + o, cp);
            else o += 4;
            i += 1 + used;
        } else if (c < 0x20) {
            if (c == '\t' || c == '\n') { if (d) d[o] = ' '; o++; i++; }
            else if (c == '\r') {
                if (d) d[o] = ' ';
                o++;
                i += (i + 1 < n && s[i + 1] == '\n') ? 2 : 1;
            } else return -1;
        } else if (c == '<') {
            return -1;
        } else {
            size_t k = utf8_char(s + i, n - i);
            if (!k) return -1;
            if (d) memcpy(d + o, s + i, k);
            o += k;
            i += k;
        }
    }
    return (long)o;
}

/* ---- html.unescape, the entities this code knows (CPython Lib/html/__init__.py: the
 * pattern &(#[0-9]+;?|#[xX][0-9a-fA-F]+;?|[^\t\n\f <&#;]{1,32};?) and the html5 table). */
/* The entity at s[0] == '&' (n bytes left): how many bytes it takes (1 when none starts
 * there: the & stays), its text in ch / *ch_n; 0 when only html.unescape knows it. */
static size_t html_entity(const uc *s, size_t n, uc ch[4], size_t *ch_n) {
    const uc *e = s + 1;
    size_t left = n - 1;
    uc d = left ? e[0] : 0;
    *ch_n = 1;
    ch[0] = '&';
    if (!left || d == '\t' || d == '\n' || d == '\f' || d == ' ' || d == '<' || d == '&' || d == ';')
        return 1; /* no entity can start here */
    if (starts(e, left, "amp;")) return 5;
    if (starts(e, left, "lt;")) { ch[0] = '<'; return 4; }
    if (starts(e, left, "gt;")) { ch[0] = '>'; return 4; }
    if (starts(e, left, "quot;")) { ch[0] = '"'; return 6; }
    if (starts(e, left, "nbsp;")) { ch[0] = 0xC2; ch[1] = 0xA0; *ch_n = 2; return 6; }
    if (d == '#' && left >= 3 && e[1] >= '0' && e[1] <= '9') {
        /* decimal, printable ASCII, with its ';': chr(n) (no special case applies) */
        uint32_t v = 0;
        size_t k = 1;
        while (k < left && k < 5 && e[k] >= '0' && e[k] <= '9') v = v * 10 + (e[k++] - '0');
        if (k >= left || e[k] != ';' || v < 0x20 || v > 0x7E) return 0;
        ch[0] = (uc)v;
        return k + 2;
    }
    return 0;
}

static int html_unescape(const uc *s, size_t n, buf *out) {
    if (!reserve(out, n)) return -1;
    size_t i = 0;
    while (i < n) {
        const uc *amp = memchr(s + i, '&', n - i);
        if (!amp) { put(out, s + i, n - i); break; }
        size_t a = (size_t)(amp - s), ch_n;
        uc ch[4] = {0};
        put(out, s + i, a - i);
        size_t used = html_entity(s + a, n - a, ch, &ch_n);
        if (!used) return PYTHON;
        put(out, ch, ch_n);
        i = a + used;
    }
    return OK;
}

/* ---- mathtext._latex_words: _COMMAND (\\([A-Za-z]+)|\\.) to words, _SYMBOL_WORDS, _TO_SPACE */
static const char *const SYMBOL_WORDS[128] = {
    ['^'] = " sup ", ['_'] = " sub ", ['='] = " eq ", ['+'] = " plus ", ['-'] = " minus ",
    ['*'] = " times ", ['/'] = " slash ", ['<'] = " lt ", ['>'] = " gt ", ['!'] = " fact ",
    ['|'] = " vbar ", ['\''] = " prime ",
    ['{'] = " ", ['}'] = " ", ['['] = " ", [']'] = " ", ['('] = " ", [')'] = " ", [';'] = " ",
    [','] = " ", ['&'] = " ", ['~'] = " ", [':'] = " ", ['$'] = " ",
};
static uc SYMBOL_LEN[128]; /* strlen of SYMBOL_WORDS, filled once */
static const char *const LAYOUT[] = {
    "left", "right", "big", "Big", "bigg", "Bigg", "bigl", "bigr", "Bigl", "Bigr", "quad", "qquad",
    "displaystyle", "textstyle", "scriptstyle", "limits", "nolimits", "mathrm", "text", "textrm",
    "operatorname", "mbox", "hspace", "vspace", NULL,
};

static uc LAYOUT_LEN[sizeof LAYOUT / sizeof *LAYOUT];

static void init_tables(void) {
    static int done;
    if (done) return;
    for (int c = 0; c < 128; c++) SYMBOL_LEN[c] = SYMBOL_WORDS[c] ? (uc)strlen(SYMBOL_WORDS[c]) : 0;
    for (size_t w = 0; LAYOUT[w]; w++) LAYOUT_LEN[w] = (uc)strlen(LAYOUT[w]);
    for (int c = 0; c < 256; c++) {
        XML_PLAIN[c] = c >= 0x20 && c < 0x80 && c != '&' && c != '<';
        TEXT_PLAIN[c] = c >= 0x21 && c < 0x80 && c != '<' && c != '&' && c != '$';
    }
    done = 1;
}

static int is_layout(const uc *s, size_t n) {
    for (size_t w = 0; LAYOUT[w]; w++)
        if (LAYOUT_LEN[w] == n && LAYOUT[w][0] == s[0] && memcmp(LAYOUT[w], s, n) == 0) return 1;
    return 0;
}

static inline int is_letter(uc c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z'); }

/* Appends the LaTeX's words; at most 7 bytes per input byte (" prime "). */
static void latex_words(const uc *s, size_t n, buf *out) {
    size_t i = 0;
    while (i < n) {
        uc c = s[i];
        if (c == '\\') {
            if (i + 1 < n && is_letter(s[i + 1])) {
                size_t k = i + 1;
                while (k < n && is_letter(s[k])) k++;
                if (is_layout(s + i + 1, k - i - 1)) put(out, " ", 1);
                else {
                    put(out, " ", 1);
                    put(out, s + i + 1, k - i - 1);
                    put(out, " ", 1);
                }
                i = k;
            } else if (i + 1 < n && s[i + 1] != '\n') { /* "." is any character but a line feed */
                uc d = s[i + 1];
                size_t k = d < 0x80 ? 1 : (d < 0xE0 ? 2 : (d < 0xF0 ? 3 : 4)); /* one code point */
                put(out, " ", 1);
                i += 1 + k;
                if (i > n) i = n; /* never for valid UTF-8; kept in bounds regardless */
            } else {
                put(out, "\\", 1);
                i++;
            }
        } else if (c < 0x80 && SYMBOL_WORDS[c]) {
            put(out, SYMBOL_WORDS[c], SYMBOL_LEN[c]);
            i++;
        } else {
            out->p[out->n++] = c;
            i++;
        }
    }
}

static const uc *find(const uc *s, size_t n, const char *lit) {
    size_t k = strlen(lit);
    return k <= n ? memmem(s, n, lit, k) : NULL;
}

#define SPAN_OPEN "<span class=\"math-container\""

/* mathtext._formulas_to_words: each _MATH_SPAN match, i.e. SPAN_OPEN, up to the first '>',
 * the LaTeX up to the first "</span>" after it, replaced by " " + words + " ". */
static int formulas_to_words(const uc *s, size_t n, buf *out, buf *tmp) {
    size_t pos = 0;
    for (;;) {
        const uc *open = find(s + pos, n - pos, SPAN_OPEN);
        const uc *gt = open ? memchr(open, '>', (size_t)(s + n - open)) : NULL;
        const uc *close = gt ? find(gt + 1, (size_t)(s + n - gt - 1), "</span>") : NULL;
        if (!close) { /* no match here, and none further: every later match needs these too */
            if (!reserve(out, n - pos)) return -1;
            put(out, s + pos, n - pos);
            return OK;
        }
        size_t before = (size_t)(open - s) - pos;
        if (!reserve(out, before)) return -1;
        put(out, s + pos, before);
        tmp->n = 0;
        int r = html_unescape(gt + 1, (size_t)(close - gt - 1), tmp);
        if (r != OK) return r;
        if (!reserve(out, 7 * tmp->n + 2)) return -1;
        put(out, " ", 1);
        latex_words(tmp->p, tmp->n, out);
        put(out, " ", 1);
        pos = (size_t)(close - s) + 7;
    }
}

/* Bytes of the Python whitespace character (str.split()) at s, or 0. */
static inline size_t space_at(const uc *s, size_t n) {
    uc c = s[0];
    if (c < 0x80) return (c == ' ' || (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x1F)) ? 1 : 0;
    if (c == 0xC2 && n >= 2 && (s[1] == 0x85 || s[1] == 0xA0)) return 2;
    if (c == 0xE1 && n >= 3 && s[1] == 0x9A && s[2] == 0x80) return 3;
    if (c == 0xE2 && n >= 3 && s[1] == 0x80 && (s[2] <= 0x8A || s[2] == 0xA8 || s[2] == 0xA9 || s[2] == 0xAF))
        return 3;
    if (c == 0xE2 && n >= 3 && s[1] == 0x81 && s[2] == 0x9F) return 3;
    if (c == 0xE3 && n >= 3 && s[1] == 0x80 && s[2] == 0x80) return 3;
    return 0;
}

/* _TAG.sub(" ", s) (<[^>]+>), then html.unescape, then " ".join(split()), in one pass:
 * a tag becomes a space and no entity spans a space, so unescaping the text between the
 * tags is the same; PYTHON at what html_unescape leaves to Python, or at a '$' (the
 * _INLINE_MATH step reads the text again). Writes out (never longer than s). */
static int tags_entities_words(const uc *s, size_t n, buf *out) {
    out->n = 0;
    if (!reserve(out, n + 1)) return -1;
    uc *d = out->p;
    size_t i = 0, o = 0;
    int pending = 0, no_gt = 0;
    while (i < n) {
        uc c = s[i];
        if (c == ' ') { /* between words: the next word writes it, if any */
            pending = o > 0;
            i++;
            continue;
        }
        if (TEXT_PLAIN[c]) { /* the common case: a run of plain bytes */
            if (pending) { d[o++] = ' '; pending = 0; }
            size_t run = i;
            while (i < n && TEXT_PLAIN[s[i]]) i++;
            memcpy(d + o, s + run, i - run);
            o += i - run;
            continue;
        }
        if (c == '<' && !no_gt && i + 1 < n && s[i + 1] != '>') {
            const uc *gt = memchr(s + i + 1, '>', n - i - 1);
            if (gt) {
                pending = o > 0;
                i = (size_t)(gt - s) + 1;
                continue;
            }
            no_gt = 1; /* no tag starts here or later */
        }
        if (c == '&') {
            uc ch[4] = {0};
            size_t ch_n, used = html_entity(s + i, n - i, ch, &ch_n);
            if (!used || ch[0] == '$') return PYTHON;
            i += used;
            if (space_at(ch, ch_n)) { /* &nbsp; or &#32; */
                pending = o > 0;
                continue;
            }
            if (pending) { d[o++] = ' '; pending = 0; }
            memcpy(d + o, ch, ch_n);
            o += ch_n;
            continue;
        }
        if (c == '$') return PYTHON;
        size_t k = space_at(s + i, n - i);
        if (k) {
            pending = o > 0;
            i += k;
            continue;
        }
        if (pending) { d[o++] = ' '; pending = 0; }
        d[o++] = c;
        i++;
    }
    out->n = o;
    return OK;
}

typedef struct {
    buf a, d, words;
} scratch;

/* mathtext.html_to_index_text(html) into out, or PYTHON. */
static int index_text(const uc *s, size_t n, scratch *w, buf *out) {
    w->a.n = 0;
    int r = formulas_to_words(s, n, &w->a, &w->d);
    if (r != OK) return r;
    return tags_entities_words(w->a.p, w->a.n, out);
}

typedef struct {
    const uc *name, *value;
    size_t name_n, value_n;
    int id; /* one of the A_ below */
} attr;

enum { A_OTHER, A_ID, A_POSTTYPEID, A_PARENTID, A_SCORE, A_ANSWERCOUNT, A_BODY, A_TITLE, A_COUNT };

static int attr_id(const uc *s, size_t n) {
#define IS(lit) (n == sizeof(lit) - 1 && memcmp(s, lit, sizeof(lit) - 1) == 0)
    switch (n) {
    case 2: return IS("Id") ? A_ID : A_OTHER;
    case 4: return IS("Body") ? A_BODY : A_OTHER;
    case 5: return IS("Score") ? A_SCORE : IS("Title") ? A_TITLE : A_OTHER;
    case 8: return IS("ParentId") ? A_PARENTID : A_OTHER;
    case 10: return IS("PostTypeId") ? A_POSTTYPEID : A_OTHER;
    case 11: return IS("AnswerCount") ? A_ANSWERCOUNT : A_OTHER;
    default: return A_OTHER;
    }
#undef IS
}

/* Attributes that st_convert_rows decodes (which checks them) in a row of kind 1 or 2. */
static int decoded(const attr *a, int answer) {
    int id = a->id;
    return id == A_ID || id == A_PARENTID || id == A_SCORE ||
           (answer ? id == A_BODY : (id == A_ANSWERCOUNT || id == A_TITLE));
}

/* int() accepts it for sure: [+-]?[0-9]+ (anything else is left to Python). */
static int plain_int(const uc *s, size_t n) {
    size_t i = (n && (s[0] == '+' || s[0] == '-')) ? 1 : 0;
    if (i == n) return 0;
    for (; i < n; i++)
        if (s[i] < '0' || s[i] > '9') return 0;
    return 1;
}

/* Scans one <row .../> at s[0] == '<'. Returns its length, 0 if it runs past n, -1 if it
 * is not for this code; fills at[] (raw values) and *k. */
static long scan_row(const uc *s, size_t n, attr *at, int *k, const attr **by_id) {
    if (n < 5) return 0;
    if (memcmp(s, "<row", 4) != 0) return -1;
    size_t i = 4;
    *k = 0;
    for (int j = 0; j < A_COUNT; j++) by_id[j] = NULL;
    for (;;) {
        size_t blanks = i;
        while (i < n && is_blank(s[i])) i++;
        if (i >= n) return 0;
        blanks = i - blanks;
        if (s[i] == '/') {
            if (i + 1 >= n) return 0;
            return s[i + 1] == '>' ? (long)(i + 2) : -1;
        }
        if (!blanks || *k == MAX_ATTRS) return -1;
        uc c = s[i];
        if (!(is_letter(c) || c == '_')) return -1;
        size_t name = i;
        while (i < n && (is_letter(s[i]) || (s[i] >= '0' && s[i] <= '9') || s[i] == '_' || s[i] == '.' ||
                         s[i] == '-'))
            i++;
        if (i >= n) return 0;
        size_t name_n = i - name;
        if (name_n >= 3 && (s[name] | 0x20) == 'x' && (s[name + 1] | 0x20) == 'm' && (s[name + 2] | 0x20) == 'l')
            return -1; /* xmlns and friends change what the row is */
        while (i < n && is_blank(s[i])) i++;
        if (i >= n) return 0;
        if (s[i] != '=') return -1;
        i++;
        while (i < n && is_blank(s[i])) i++;
        if (i >= n) return 0;
        if (s[i] != '"') return -1;
        i++;
        const uc *end = memchr(s + i, '"', n - i);
        if (!end) return n - i > MAX_ROW ? -1 : 0;
        size_t value_n = (size_t)(end - s) - i;
        if (memchr(s + i, '<', value_n)) return -1;
        for (int j = 0; j < *k; j++) /* a duplicate attribute is an XML error */
            if (at[j].name_n == name_n && memcmp(at[j].name, s + name, name_n) == 0) return -1;
        int id = attr_id(s + name, name_n);
        at[*k] = (attr){s + name, s + i, name_n, value_n, id};
        if (id != A_OTHER) by_id[id] = &at[*k];
        (*k)++;
        i += value_n + 1;
        if (i > MAX_ROW) return -1;
    }
}

/* Decodes an attribute into out (appending, NUL-terminated). Returns 0, -1 (no memory)
 * or -2 (not a value this code vouches for). */
static int put_value(const attr *a, buf *out) {
    if (!a) {
        if (!reserve(out, 1)) return -1;
        out->p[out->n++] = 0;
        return 0;
    }
    if (!reserve(out, a->value_n + 1)) return -1;
    long m = xml_value(a->value, a->value_n, out->p + out->n);
    if (m < 0) return -2;
    out->n += (size_t)m;
    out->p[out->n++] = 0;
    return 0;
}

/* ---- JSON as CPython's json.encoder.encode_basestring_ascii writes it (Modules/_json.c,
 * ascii_escape_unichar): printable ASCII as it is but " and \, short escapes for \b \f \n
 * \r \t, everything else \u with four lower-case hex digits (a surrogate pair above
 * U+FFFF). s is valid UTF-8. At most 6 bytes out per byte in. */
static size_t json_escape(const uc *s, size_t n, uc *d) {
    static const char hex[] = "0123456789abcdef";
    size_t i = 0, o = 0;
    while (i < n) {
        size_t run = i;
        while (i < n && s[i] >= 0x20 && s[i] < 0x7F && s[i] != '"' && s[i] != '\\') i++;
        memcpy(d + o, s + run, i - run);
        o += i - run;
        if (i >= n) break;
        uc c = s[i];
        uint32_t cp;
        if (c == '"' || c == '\\') { d[o++] = '\\'; d[o++] = c; i++; continue; }
        if (c == '\b') { d[o++] = '\\'; d[o++] = 'b'; i++; continue; }
        if (c == '\f') { d[o++] = '\\'; d[o++] = 'f'; i++; continue; }
        if (c == '\n') { d[o++] = '\\'; d[o++] = 'n'; i++; continue; }
        if (c == '\r') { d[o++] = '\\'; d[o++] = 'r'; i++; continue; }
        if (c == '\t') { d[o++] = '\\'; d[o++] = 't'; i++; continue; }
        if (c < 0x80) { cp = c; i++; }
        else if (c < 0xE0) { cp = ((uint32_t)(c & 0x1F) << 6) | (s[i + 1] & 0x3F); i += 2; }
        else if (c < 0xF0) {
            cp = ((uint32_t)(c & 0x0F) << 12) | ((uint32_t)(s[i + 1] & 0x3F) << 6) | (s[i + 2] & 0x3F);
            i += 3;
        } else {
            cp = ((uint32_t)(c & 0x07) << 18) | ((uint32_t)(s[i + 1] & 0x3F) << 12) |
                 ((uint32_t)(s[i + 2] & 0x3F) << 6) | (s[i + 3] & 0x3F);
            i += 4;
        }
        uint32_t units[2] = {cp, 0};
        int k = 1;
        if (cp >= 0x10000) {
            units[0] = 0xD800 | ((cp - 0x10000) >> 10);
            units[1] = 0xDC00 | ((cp - 0x10000) & 0x3FF);
            k = 2;
        }
        for (int u = 0; u < k; u++) {
            d[o++] = '\\'; d[o++] = 'u';
            d[o++] = hex[(units[u] >> 12) & 0xF]; d[o++] = hex[(units[u] >> 8) & 0xF];
            d[o++] = hex[(units[u] >> 4) & 0xF]; d[o++] = hex[units[u] & 0xF];
        }
    }
    return o;
}

/* ---- question titles of the range, by question id: JSON-escaped index text. A later
 * question with the same id replaces the title, as the Python dict does. */
typedef struct {
    uc *key, *value; /* value NULL: a free slot */
    size_t key_n, value_n;
    uint64_t hash;
} slot;

typedef struct {
    slot *slots;
    size_t cap, used;
    scratch w;
    buf value, text, esc;
} state;

static uint64_t fnv1a(const uc *s, size_t n) {
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < n; i++) h = (h ^ s[i]) * 1099511628211ULL;
    return h;
}

static slot *lookup(state *st, const uc *key, size_t n, uint64_t h) {
    size_t mask = st->cap - 1, i = h & mask;
    while (st->slots[i].value && !(st->slots[i].hash == h && st->slots[i].key_n == n &&
                                    memcmp(st->slots[i].key, key, n) == 0))
        i = (i + 1) & mask;
    return &st->slots[i];
}

static const slot *title_of(state *st, const uc *key, size_t n) {
    if (!st->used) return NULL;
    slot *sl = lookup(st, key, n, fnv1a(key, n));
    return sl->value ? sl : NULL;
}

/* 0, or -1 (no memory). */
static int set_title(state *st, const uc *key, size_t n, const uc *value, size_t value_n) {
    if (2 * (st->used + 1) > st->cap) { /* grow: at most half full */
        size_t cap = st->cap ? 2 * st->cap : 1024;
        slot *old = st->slots, *slots = calloc(cap, sizeof *slots);
        if (!slots) return -1;
        size_t old_cap = st->cap;
        st->slots = slots;
        st->cap = cap;
        for (size_t i = 0; i < old_cap; i++)
            if (old[i].value) *lookup(st, old[i].key, old[i].key_n, old[i].hash) = old[i];
        free(old);
    }
    uint64_t h = fnv1a(key, n);
    slot *sl = lookup(st, key, n, h);
    uc *v = malloc(value_n + 1), *k = sl->value ? sl->key : malloc(n + 1);
    if (!v || !k) { free(v); if (!sl->value) free(k); return -1; }
    if (sl->value) free(sl->value);
    else {
        memcpy(k, key, n);
        sl->key = k;
        sl->key_n = n;
        sl->hash = h;
        st->used++;
    }
    memcpy(v, value, value_n);
    v[value_n] = 0; /* never NULL, even for an empty title */
    sl->value = v;
    sl->value_n = value_n;
    return 0;
}

void *st_new(void) {
    init_tables();
    return calloc(1, sizeof(state));
}

void st_free(void *handle) {
    state *st = handle;
    if (!st) return;
    for (size_t i = 0; i < st->cap; i++)
        if (st->slots[i].value) { free(st->slots[i].key); free(st->slots[i].value); }
    free(st->slots);
    free(st->w.a.p); free(st->w.d.p); free(st->w.words.p);
    free(st->value.p); free(st->text.p); free(st->esc.p);
    free(st);
}

/* A question title that Python converted (a "q" record): JSON-escaped. 0, or -1. */
int st_add_title(void *handle, const uc *id, size_t id_n, const uc *title, size_t title_n) {
    return set_title(handle, id, id_n, title, title_n);
}

/* Converts the whole rows at in[0..n) into records of four NUL-terminated fields:
 *   "J" lines "" ""          answers whose question this range has seen: JSONL lines
 *                            (lucene_baseline.jsonl.json_line of id, "title text"), one
 *                            record for a run of them
 *   "1" id title ""          a question (its title also kept here for its answers)
 *   "q" id title-html ""     a question whose title needs Python: the call ends after
 *                            it, so that Python's title (st_add_title) is known to the rows after it
 *   "d" id parent text       an answer whose question this range has not seen (yet)
 *   "a" id parent body-html  an answer whose text needs Python
 * *consumed: bytes fully handled (blanks included); *written: bytes of out used.
 * final: no more bytes follow (a cut row is then a stop).
 *   ST_DONE  all whole rows done (what is left is the start of a row cut by the end of in)
 *   ST_STOP  in[*consumed] starts something this code leaves to lxml
 *   ST_FULL  out has no room for the next row: drain it and call again from *consumed
 *   ST_NOMEM malloc failed
 *   ST_YIELD a "q" record was written: handle it, then call again from *consumed */
int st_convert_rows(void *handle, const uc *in, size_t n, int final, uc *out, size_t cap, size_t *consumed,
                    size_t *written) {
    static attr at[MAX_ATTRS];
    state *st = handle;
    scratch *w = &st->w;
    size_t i = 0, o = 0;
    int status = ST_DONE, run = 0; /* run: a "J" record is open (its lines end at o) */
    *consumed = 0;
    *written = 0;
#define CLOSE_RUN() do { if (run) { out[o++] = 0; out[o++] = 0; out[o++] = 0; run = 0; } } while (0)
    if (cap < 8) return ST_FULL;
    cap -= 4; /* room to close a run, whatever stops the loop */
    while (1) {
        while (i < n && is_blank(in[i])) i++;
        *consumed = i;
        if (i >= n) break;
        int k;
        const attr *by_id[A_COUNT];
        long len = scan_row(in + i, n - i, at, &k, by_id);
        if (len == 0) { status = final ? ST_STOP : ST_DONE; break; }
        if (len < 0) { status = ST_STOP; break; }
        const attr *kind = by_id[A_POSTTYPEID];
        if (!kind) { status = ST_STOP; break; } /* Python reports it */
        if (memchr(kind->value, '&', kind->value_n)) { status = ST_STOP; break; } /* compare it decoded */
        int post = kind->value_n == 1 && (kind->value[0] == '1' || kind->value[0] == '2');
        int answer = post && kind->value[0] == '2';
        /* every attribute must be well-formed for lxml to accept the row: the ones not decoded below */
        int bad = 0;
        for (int j = 0; j < k && !bad; j++)
            if (!post || !decoded(&at[j], answer)) bad = xml_value(at[j].value, at[j].value_n, NULL) < 0;
        if (bad) { status = ST_STOP; break; }
        if (!post) {
            i += (size_t)len; /* other post types are skipped */
            *consumed = i;
            continue;
        }
        /* Id, ParentId, Score, AnswerCount decoded, then checked as read_post_rows checks them */
        buf *value = &st->value, *text = &st->text;
        value->n = 0;
        const attr *ident = by_id[A_ID], *parent = by_id[A_PARENTID];
        const attr *count = answer ? NULL : by_id[A_ANSWERCOUNT], *score = by_id[A_SCORE];
        int r = put_value(ident, value);
        if (!r) r = put_value(parent, value);
        if (!r) r = put_value(score, value);
        if (!r) r = put_value(count, value);
        if (r) { status = r == -1 ? ST_NOMEM : ST_STOP; break; }
        const uc *v_id = value->p, *v_parent = v_id + strlen((char *)v_id) + 1;
        const uc *v_score = v_parent + strlen((char *)v_parent) + 1;
        const uc *v_count = v_score + strlen((char *)v_score) + 1;
        if (!*v_id || (answer && !*v_parent) || (*v_score && !plain_int(v_score, strlen((char *)v_score))) ||
            (!answer && *v_count && !plain_int(v_count, strlen((char *)v_count)))) {
            status = ST_STOP;
            break;
        }
        /* the HTML: Body of an answer, Title of a question */
        const attr *html = by_id[answer ? A_BODY : A_TITLE];
        text->n = 0;
        if ((r = put_value(html, text)) != 0) { status = r == -1 ? ST_NOMEM : ST_STOP; break; }
        size_t html_n = text->n - 1;
        size_t id_n = strlen((char *)v_id), parent_n = answer ? strlen((char *)v_parent) : 0;
        w->words.n = 0;
        int conv = html_n ? index_text(text->p, html_n, w, &w->words) : OK;
        if (conv < 0) { status = ST_NOMEM; break; }
        const uc *body = conv == OK ? w->words.p : text->p;
        size_t body_n = conv == OK ? w->words.n : html_n;
        const slot *title = answer && conv == OK ? title_of(st, v_parent, parent_n) : NULL;
        if (title) { /* a JSONL line in the open run: {"id": "ID", "contents": "TITLE TEXT"}\n */
            size_t need = (run ? 0 : 2) + 6 * (id_n + body_n) + title->value_n + 32 + 4;
            if (o + need > cap) { status = ST_FULL; break; }
            if (!run) { out[o++] = 'J'; out[o++] = 0; run = 1; }
            memcpy(out + o, "{\"id\": \"", 8); o += 8;
            o += json_escape(v_id, id_n, out + o);
            memcpy(out + o, "\", \"contents\": \"", 16); o += 16;
            memcpy(out + o, title->value, title->value_n); o += title->value_n;
            out[o++] = ' ';
            o += json_escape(body, body_n, out + o);
            memcpy(out + o, "\"}\n", 3); o += 3;
        } else {
            size_t need = 4 + 2 + id_n + 1 + (answer ? parent_n + 1 : 0) + body_n + 1 + (answer ? 0 : 1);
            if (o + need > cap) { status = ST_FULL; break; }
            CLOSE_RUN();
            if (!answer && conv == OK) { /* keep the title for the answers that follow */
                if (!reserve(&st->esc, 6 * body_n + 1)) { status = ST_NOMEM; break; }
                size_t esc_n = json_escape(body, body_n, st->esc.p);
                if (set_title(st, v_id, id_n, st->esc.p, esc_n) < 0) { status = ST_NOMEM; break; }
            }
            out[o++] = answer ? (conv == OK ? 'd' : 'a') : (conv == OK ? '1' : 'q');
            out[o++] = 0;
            memcpy(out + o, v_id, id_n + 1);
            o += id_n + 1;
            if (answer) {
                memcpy(out + o, v_parent, parent_n + 1);
                o += parent_n + 1;
            }
            if (body_n) memcpy(out + o, body, body_n);
            o += body_n;
            out[o++] = 0;
            if (!answer) out[o++] = 0;
            if (!answer && conv != OK) { /* Python converts it and tells us (st_add_title) */
                i += (size_t)len;
                *consumed = i;
                status = ST_YIELD;
                break;
            }
        }
        i += (size_t)len;
        *consumed = i;
    }
    CLOSE_RUN();
#undef CLOSE_RUN
    *written = o;
    return status;
}
