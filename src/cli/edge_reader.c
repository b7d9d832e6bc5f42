/* Edge-list reader (see edge_reader.h): the whole input is read into memory,
 * then parsed line by line; names are interned in one hash table keyed by
 * (graph, text). */
#include "edge_reader.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define MAX_FIELDS 5 /* 4 at most, and where a 5th starts */

typedef struct slot {
  uint64_t hash;
  int64_t owner; /* -1: graph ids; g: node names of graph g */
  int64_t id;
  const char *s; /* NULL: empty slot */
} slot;

typedef struct parser {
  const char *name;
  const edge_config *cfg;
  char *err;
  size_t errlen;
  /* interned names */
  slot *tab;
  size_t cap, used;
  char **strings;
  int64_t n_strings, cap_strings;
  /* edges in file order */
  int64_t m, cap_m;
  int64_t *eg, *es, *ed, *eline;
  double *ew;
  /* per graph: nodes (max id + 1, or names so far), first line */
  int64_t count, cap_g;
  int64_t *gn, *gline;
  const char **gid;
} parser;

static int fail_at(parser *p, int64_t line, int64_t col, const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (col > 0)
    snprintf(p->err, p->errlen, "%s:%lld:%lld: %s", p->name, (long long)line, (long long)col, msg);
  else
    snprintf(p->err, p->errlen, "%s:%lld: %s", p->name, (long long)line, msg);
  return -1;
}

static int oom(parser *p) {
  snprintf(p->err, p->errlen, "gstat spectral: %s: out of memory reading the edges", p->name);
  return -1;
}

/* Column (characters) of byte `off` of a line. */
static int64_t column(const char *line, size_t off) {
  int64_t col = 1;
  for (size_t i = 0; i < off; i++) col += ((unsigned char)line[i] & 0xC0) != 0x80;
  return col;
}

/* A field shortened for a message. */
static void shown(char *dst, size_t cap, const char *s, size_t n) {
  size_t lim = cap > 8 ? cap - 8 : 0;
  if (n <= lim) {
    memcpy(dst, s, n);
    dst[n] = '\0';
    return;
  }
  while (lim > 0 && ((unsigned char)s[lim] & 0xC0) == 0x80) lim--; /* whole characters */
  memcpy(dst, s, lim);
  memcpy(dst + lim, "...", 4);
}

/* Offset of the first NUL or invalid UTF-8 byte in s[0, n), or n. */
static size_t bad_byte(const unsigned char *s, size_t n) {
  size_t i = 0;
  while (i < n) {
    unsigned c = s[i];
    if (c < 0x80) {
      if (c == 0) return i;
      i++;
      continue;
    }
    size_t len = c >= 0xC2 && c <= 0xDF   ? 2
                 : c >= 0xE0 && c <= 0xEF ? 3
                 : c >= 0xF0 && c <= 0xF4 ? 4
                                          : 0;
    if (len == 0 || i + len > n) return i;
    for (size_t k = 1; k < len; k++)
      if ((s[i + k] & 0xC0) != 0x80) return i;
    if ((c == 0xE0 && s[i + 1] < 0xA0) || (c == 0xED && s[i + 1] > 0x9F) ||
        (c == 0xF0 && s[i + 1] < 0x90) || (c == 0xF4 && s[i + 1] > 0x8F))
      return i;
    i += len;
  }
  return n;
}

static int grow(void **buf, int64_t *cap, int64_t need, size_t elem) {
  if (need <= *cap) return 0;
  int64_t c = *cap ? *cap * 2 : 1024;
  if (c < need) c = need;
  void *b = realloc(*buf, (size_t)c * elem);
  if (!b) return -1;
  *buf = b;
  *cap = c;
  return 0;
}

static uint64_t hash_of(int64_t owner, const char *s, size_t n) {
  uint64_t h = 1469598103934665603ull ^ (uint64_t)owner;
  for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
  return h ^ (h >> 29);
}

static int rehash(parser *p) {
  size_t cap = p->cap ? p->cap * 2 : 4096;
  slot *t = calloc(cap, sizeof(slot));
  if (!t) return -1;
  for (size_t i = 0; i < p->cap; i++) {
    if (!p->tab[i].s) continue;
    size_t j = p->tab[i].hash & (cap - 1);
    while (t[j].s) j = (j + 1) & (cap - 1);
    t[j] = p->tab[i];
  }
  free(p->tab);
  p->tab = t;
  p->cap = cap;
  return 0;
}

/* Index of name s[0, n) of owner: an existing one, or *next (then
 * incremented). *text receives the interned copy. Returns -1 on OOM. */
static int64_t intern(parser *p, int64_t owner, const char *s, size_t n, int64_t *next,
                      const char **text) {
  if ((p->used + 1) * 2 > p->cap && rehash(p)) return -1;
  uint64_t h = hash_of(owner, s, n);
  size_t j = h & (p->cap - 1);
  while (p->tab[j].s) {
    slot *e = &p->tab[j];
    if (e->hash == h && e->owner == owner && strncmp(e->s, s, n) == 0 && e->s[n] == '\0') {
      *text = e->s;
      return e->id;
    }
    j = (j + 1) & (p->cap - 1);
  }
  if (grow((void **)&p->strings, &p->cap_strings, p->n_strings + 1, sizeof(char *))) return -1;
  char *c = malloc(n + 1);
  if (!c) return -1;
  memcpy(c, s, n);
  c[n] = '\0';
  p->strings[p->n_strings++] = c;
  slot e = {h, owner, (*next)++, c};
  p->tab[j] = e;
  p->used++;
  *text = c;
  return e.id;
}

static int is_digit(char c) {
  return c >= '0' && c <= '9';
}

/* A decimal number (no hex, inf or nan spellings). */
static int decimal(const char *s, size_t n) {
  size_t i = 0, digits = 0;
  if (i < n && (s[i] == '+' || s[i] == '-')) i++;
  while (i < n && is_digit(s[i])) i++, digits++;
  if (i < n && s[i] == '.') {
    i++;
    while (i < n && is_digit(s[i])) i++, digits++;
  }
  if (digits == 0) return 0;
  if (i < n && (s[i] == 'e' || s[i] == 'E')) {
    i++;
    if (i < n && (s[i] == '+' || s[i] == '-')) i++;
    size_t e = 0;
    while (i < n && is_digit(s[i])) i++, e++;
    if (e == 0) return 0;
  }
  return i == n;
}

typedef struct field {
  const char *s;
  size_t n, off; /* text, length, byte offset in the line */
} field;

/* Split a line (comment already cut off); returns the field count, or -1
 * with *bad at an empty comma-separated field. */
static int split(const char *line, size_t len, field *f, int maxf, size_t *bad) {
  int nf = 0;
  if (memchr(line, ',', len)) {
    size_t i = 0;
    for (;;) {
      size_t a = i;
      while (a < len && (line[a] == ' ' || line[a] == '\t')) a++;
      size_t b = a;
      while (b < len && line[b] != ',') b++;
      size_t e = b;
      while (e > a && (line[e - 1] == ' ' || line[e - 1] == '\t')) e--;
      if (e == a) {
        *bad = a;
        return -1;
      }
      if (nf < maxf) f[nf] = (field){line + a, e - a, a};
      nf++;
      if (b >= len) break;
      i = b + 1;
    }
    return nf;
  }
  size_t i = 0;
  while (i < len) {
    while (i < len && (line[i] == ' ' || line[i] == '\t')) i++;
    if (i >= len) break;
    size_t a = i;
    while (i < len && line[i] != ' ' && line[i] != '\t') i++;
    if (nf < maxf) f[nf] = (field){line + a, i - a, a};
    nf++;
  }
  return nf;
}

static int64_t new_graph(parser *p, int64_t line, const char *id) {
  int64_t cap = p->cap_g;
  if (grow((void **)&p->gn, &cap, p->count + 1, sizeof(int64_t))) return -1;
  if (cap != p->cap_g) { /* the three arrays grow together */
    int64_t *gl = realloc(p->gline, sizeof(int64_t) * (size_t)cap);
    if (!gl) return -1;
    p->gline = gl;
    const char **gi = realloc(p->gid, sizeof(char *) * (size_t)cap);
    if (!gi) return -1;
    p->gid = gi;
    p->cap_g = cap;
  }
  p->gn[p->count] = 0;
  p->gline[p->count] = line;
  p->gid[p->count] = id;
  return p->count++;
}

/* A node id field of graph g: its index, or -1 with the message set, -2 on OOM. */
static int64_t node_of(parser *p, int64_t g, const field *f, const char *line, int64_t ln,
                       int header_hint) {
  char txt[64];
  if (p->cfg->ids == EDGE_IDS_LABEL) {
    const char *text;
    int64_t id = intern(p, g, f->s, f->n, &p->gn[g], &text);
    return id < 0 ? -2 : id;
  }
  shown(txt, sizeof txt, f->s, f->n);
  size_t i = 0;
  int64_t v = 0;
  if (f->n > 0 && f->s[0] == '+') i = 1;
  if (i == f->n) goto bad;
  for (; i < f->n; i++) {
    if (!is_digit(f->s[i])) goto bad;
    if (v <= EDGE_MAX_ID) v = v * 10 + (f->s[i] - '0');
  }
  if (p->cfg->nodes > 0 && v >= p->cfg->nodes) {
    fail_at(p, ln, column(line, f->off), "node id %s is out of range (--nodes %lld: ids 0 to %lld)",
            txt, (long long)p->cfg->nodes, (long long)p->cfg->nodes - 1);
    return -1;
  }
  if (v > EDGE_MAX_ID) {
    fail_at(p, ln, column(line, f->off),
            "node id %s is too large (at most %lld; --node-ids label numbers arbitrary ids)", txt,
            (long long)EDGE_MAX_ID);
    return -1;
  }
  if (v + 1 > p->gn[g]) p->gn[g] = v + 1;
  return v;
bad:
  fail_at(p, ln, column(line, f->off),
          "not a node id: \"%s\" (ids are integers >= 0; --node-ids label takes names%s)", txt,
          header_hint ? "; if this line is a header, pass --header" : "");
  return -1;
}

static int weight_of(parser *p, const field *f, const char *line, int64_t ln, double *w) {
  char txt[64], buf[128];
  shown(txt, sizeof txt, f->s, f->n);
  int64_t col = column(line, f->off);
  if (f->n >= sizeof buf || !decimal(f->s, f->n)) {
    char low[8] = {0};
    for (size_t i = 0; i < f->n && i < 7; i++) low[i] = (char)(f->s[i] | 0x20);
    if (f->n <= 4 && (strstr(low, "nan") || strstr(low, "inf")))
      return fail_at(p, ln, col, "weight \"%s\" is not finite", txt);
    return fail_at(p, ln, col, "not a number: weight \"%s\"", txt);
  }
  memcpy(buf, f->s, f->n);
  buf[f->n] = '\0';
  errno = 0;
  double v = strtod(buf, NULL);
  if (errno == ERANGE && fabs(v) > 1)
    return fail_at(p, ln, col, "weight \"%s\" is out of range", txt);
  if (v < 0) return fail_at(p, ln, col, "negative weight %s (weights must be >= 0)", txt);
  *w = v + 0.0; /* -0 -> 0 */
  return 0;
}

static int parse(parser *p, const char *text, size_t size) {
  const edge_config *cfg = p->cfg;
  int lead = cfg->batch ? 1 : 0, expect = 0;
  int64_t expect_line = 0, ln = 0, first_data = 0;
  int header_left = cfg->header;
  size_t pos = 0;
  if (size == 0) return fail_at(p, 1, 0, "empty input (no edges)");
  if (size >= 3 && memcmp(text, "\xEF\xBB\xBF", 3) == 0) pos = 3;
  while (pos < size) {
    const char *line = text + pos;
    const char *nl = memchr(line, '\n', size - pos);
    size_t len = nl ? (size_t)(nl - line) : size - pos;
    pos += len + (nl != NULL);
    ln++;
    size_t b = bad_byte((const unsigned char *)line, len);
    if (b < len) {
      unsigned char c = (unsigned char)line[b];
      return c == 0 ? fail_at(p, ln, column(line, b), "NUL byte (a binary file?)")
                    : fail_at(p, ln, column(line, b), "invalid UTF-8 (byte 0x%02X; a binary file?)",
                              c);
    }
    if (len > 0 && line[len - 1] == '\r') len--;
    const char *hash = memchr(line, '#', len);
    if (hash) len = (size_t)(hash - line);
    field f[MAX_FIELDS];
    size_t badf = 0;
    int nf = split(line, len, f, MAX_FIELDS, &badf);
    if (nf == 0) continue;
    if (nf < 0) return fail_at(p, ln, column(line, badf), "empty field");
    if (header_left) {
      header_left = 0;
      continue;
    }
    if (!expect) {
      if (nf < 2 + lead || nf > 3 + lead)
        return fail_at(p, ln, 0, "expected %d or %d fields (%ssrc dst [weight]), found %d",
                       2 + lead, 3 + lead, lead ? "graph_id " : "", nf);
      expect = nf;
      expect_line = ln;
      first_data = ln;
    } else if (nf != expect) {
      int64_t col = nf > expect ? column(line, f[expect].off) : column(line, len);
      return fail_at(p, ln, col, "expected %d fields (as in line %lld), found %d", expect,
                     (long long)expect_line, nf);
    }
    int64_t g = 0;
    if (lead) {
      const char *id;
      int64_t before = p->count;
      int64_t next = p->count;
      g = intern(p, -1, f[0].s, f[0].n, &next, &id);
      if (g < 0) return oom(p);
      if (g == before && new_graph(p, ln, id) < 0) return oom(p);
    } else if (p->count == 0 && new_graph(p, ln, "") < 0) {
      return oom(p);
    }
    int64_t cap = p->cap_m;
    if (grow((void **)&p->eg, &cap, p->m + 1, sizeof(int64_t))) return oom(p);
    if (cap != p->cap_m) { /* the edge arrays grow together */
      int64_t *es = realloc(p->es, sizeof(int64_t) * (size_t)cap);
      if (es) p->es = es;
      int64_t *ed = realloc(p->ed, sizeof(int64_t) * (size_t)cap);
      if (ed) p->ed = ed;
      int64_t *el = realloc(p->eline, sizeof(int64_t) * (size_t)cap);
      if (el) p->eline = el;
      double *ew = realloc(p->ew, sizeof(double) * (size_t)cap);
      if (ew) p->ew = ew;
      if (!es || !ed || !el || !ew) return oom(p);
      p->cap_m = cap;
    }
    int hint = ln == first_data && !cfg->header;
    int64_t s = node_of(p, g, &f[lead], line, ln, hint);
    if (s < 0) return s == -2 ? oom(p) : -1;
    int64_t d = node_of(p, g, &f[lead + 1], line, ln, hint);
    if (d < 0) return d == -2 ? oom(p) : -1;
    double w = 1;
    if (nf == 3 + lead && weight_of(p, &f[lead + 2], line, ln, &w)) return -1;
    p->eg[p->m] = g;
    p->es[p->m] = s;
    p->ed[p->m] = d;
    p->ew[p->m] = w;
    p->eline[p->m] = ln;
    p->m++;
  }
  if (p->m == 0)
    return fail_at(p, ln > 0 ? ln : 1, 0,
                   cfg->header && !header_left ? "no edges after the header line"
                                               : "no edges (only comments and blank lines)");
  return expect == 3 + lead ? 1 : 0;
}

static int read_all(FILE *in, char **out, size_t *size) {
  size_t cap = 1 << 16, n = 0;
  char *buf = malloc(cap);
  if (!buf) return -1;
  for (;;) {
    if (n == cap) {
      char *b = realloc(buf, cap * 2);
      if (!b) {
        free(buf);
        return -1;
      }
      buf = b;
      cap *= 2;
    }
    size_t got = fread(buf + n, 1, cap - n, in);
    n += got;
    if (got == 0) break;
  }
  if (ferror(in)) {
    free(buf);
    return -2;
  }
  *out = buf;
  *size = n;
  return 0;
}

static void parser_free(parser *p) {
  free(p->tab);
  free(p->eg), free(p->es), free(p->ed), free(p->ew), free(p->eline);
  free(p->gn), free(p->gline), free(p->gid);
}

/* Move the edges into per-graph arrays (file order within a graph). */
static int distribute(parser *p, edge_set *out, int weighted) {
  out->g = calloc((size_t)p->count, sizeof(edge_graph));
  if (!out->g) return -1;
  out->count = p->count;
  out->weighted = weighted;
  for (int64_t e = 0; e < p->m; e++) out->g[p->eg[e]].m++;
  for (int64_t g = 0; g < p->count; g++) {
    edge_graph *G = &out->g[g];
    size_t m = (size_t)G->m;
    G->id = p->gid[g];
    G->line = p->gline[g];
    G->n = p->cfg->ids == EDGE_IDS_INT && p->cfg->nodes > 0 ? p->cfg->nodes : p->gn[g];
    G->src = malloc(sizeof(int64_t) * m);
    G->dst = malloc(sizeof(int64_t) * m);
    G->w = weighted ? malloc(sizeof(double) * m) : NULL;
    if (p->cfg->ids == EDGE_IDS_LABEL) G->labels = calloc((size_t)G->n + 1, sizeof(char *));
    if (!G->src || !G->dst || (weighted && !G->w) || (p->cfg->ids == EDGE_IDS_LABEL && !G->labels))
      return -1;
    G->m = 0;
  }
  for (int64_t e = 0; e < p->m; e++) {
    edge_graph *G = &out->g[p->eg[e]];
    G->src[G->m] = p->es[e];
    G->dst[G->m] = p->ed[e];
    if (G->w) G->w[G->m] = p->ew[e];
    G->m++;
  }
  if (p->cfg->ids == EDGE_IDS_LABEL) {
    for (size_t i = 0; i < p->cap; i++) {
      const slot *s = &p->tab[i];
      if (s->s && s->owner >= 0) out->g[s->owner].labels[s->id] = s->s;
    }
  }
  return 0;
}

int edge_read(FILE *in, const char *name, const edge_config *cfg, edge_set *out, char *err,
              size_t errlen) {
  parser p;
  memset(&p, 0, sizeof p);
  memset(out, 0, sizeof *out);
  p.name = name;
  p.cfg = cfg;
  p.err = err;
  p.errlen = errlen;
  char *text = NULL;
  size_t size = 0;
  int rc = read_all(in, &text, &size);
  if (rc) {
    snprintf(err, errlen,
             rc == -1 ? "gstat spectral: %s: out of memory reading the input"
                      : "gstat spectral: cannot read %s",
             name);
    return -1;
  }
  int weighted = parse(&p, text, size);
  free(text);
  if (weighted >= 0 && distribute(&p, out, weighted)) weighted = oom(&p);
  out->strings = p.strings;
  out->n_strings = p.n_strings;
  parser_free(&p);
  if (weighted < 0) {
    edge_set_free(out);
    return -1;
  }
  return 0;
}

void edge_set_free(edge_set *s) {
  if (!s) return;
  for (int64_t g = 0; s->g && g < s->count; g++) {
    free(s->g[g].src), free(s->g[g].dst), free(s->g[g].w);
    free((void *)s->g[g].labels);
  }
  free(s->g);
  for (int64_t i = 0; i < s->n_strings; i++) free(s->strings[i]);
  free(s->strings);
  memset(s, 0, sizeof *s);
}
