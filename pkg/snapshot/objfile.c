/* objfile.c -- JSON or multi-document YAML files into jansson values. */
#include "snapshot/objfile.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "util/util.h"

typedef struct yconv {
    yaml_document_t *doc;
    size_t nodes;
    char *err;
    size_t errlen;
} yconv_t;

static json_t *yfail(yconv_t *c, const yaml_node_t *n, const char *what)
{
    util_errf(c->err, c->errlen, "line %lu: %s", (unsigned long)n->start_mark.line + 1, what);
    return NULL;
}

/* A plain scalar that reads as an integer ("12", "-3", "0x1f" is not). */
static int is_int(const char *s, long long *v)
{
    const char *p = s;
    if (*p == '-' || *p == '+')
        p++;
    if (!isdigit((unsigned char)*p))
        return 0;
    for (const char *q = p; *q; q++)
        if (!isdigit((unsigned char)*q))
            return 0;
    errno = 0;
    *v = strtoll(s, NULL, 10);
    return errno == 0;
}

static int is_real(const char *s, double *v)
{
    char *end;
    if (!*s || !(isdigit((unsigned char)*s) || *s == '-' || *s == '+' || *s == '.'))
        return 0;
    errno = 0;
    *v = strtod(s, &end);
    /* strtod takes "inf" and hex too; YAML's plain reals are decimal */
    return errno == 0 && *end == '\0' && !strpbrk(s, "xXnN");
}

static json_t *yscalar(yconv_t *c, const yaml_node_t *n)
{
    const char *s = (const char *)n->data.scalar.value;
    size_t len = n->data.scalar.length;
    if (memchr(s, '\0', len))
        return yfail(c, n, "a NUL character in a scalar");
    if (n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE) {
        long long i;
        double d;
        if (!strcmp(s, "true") || !strcmp(s, "True") || !strcmp(s, "TRUE"))
            return json_true();
        if (!strcmp(s, "false") || !strcmp(s, "False") || !strcmp(s, "FALSE"))
            return json_false();
        if (!*s || !strcmp(s, "~") || !strcmp(s, "null") || !strcmp(s, "Null") || !strcmp(s, "NULL"))
            return json_null();
        if (is_int(s, &i))
            return json_integer(i);
        if (is_real(s, &d))
            return json_real(d);
    }
    json_t *j = json_stringn(s, len);
    return j ? j : yfail(c, n, "a scalar is not UTF-8");
}

static json_t *yconv(yconv_t *c, yaml_node_t *n, int depth);

static json_t *ymapping(yconv_t *c, yaml_node_t *n, int depth)
{
    json_t *o = json_object();
    for (yaml_node_pair_t *p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top; p++) {
        yaml_node_t *k = yaml_document_get_node(c->doc, p->key);
        yaml_node_t *v = yaml_document_get_node(c->doc, p->value);
        if (!k || !v || k->type != YAML_SCALAR_NODE || memchr(k->data.scalar.value, '\0', k->data.scalar.length)) {
            yfail(c, k ? k : n, "a map key is not a string");
            goto fail;
        }
        const char *ks = (const char *)k->data.scalar.value;
        json_t *jv = yconv(c, v, depth + 1);
        if (!jv)
            goto fail;
        if (json_object_set_new(o, ks, jv) < 0) {
            yfail(c, k, "a map key is not UTF-8");
            goto fail;
        }
    }
    return o;
fail:
    json_decref(o);
    return NULL;
}

static json_t *yconv(yconv_t *c, yaml_node_t *n, int depth)
{
    if (depth > OBJFILE_MAX_DEPTH)
        return yfail(c, n, "nested too deep");
    /* aliases make a document a graph: a bound on nodes visited stops a
     * billion-laughs file */
    if (++c->nodes > 50u * 1000 * 1000)
        return yfail(c, n, "too many nodes (aliases?)");
    if (n->type == YAML_SCALAR_NODE)
        return yscalar(c, n);
    if (n->type == YAML_MAPPING_NODE)
        return ymapping(c, n, depth);
    if (n->type != YAML_SEQUENCE_NODE)
        return yfail(c, n, "an empty node");
    json_t *a = json_array();
    for (yaml_node_item_t *i = n->data.sequence.items.start; i < n->data.sequence.items.top; i++) {
        yaml_node_t *e = yaml_document_get_node(c->doc, *i);
        json_t *je = e ? yconv(c, e, depth + 1) : NULL;
        if (!je) {
            json_decref(a);
            return NULL;
        }
        json_array_append_new(a, je);
    }
    return a;
}

/* One JSON value or several one after another (as `kubectl get -o json`
 * output concatenated). */
static json_t *parse_json(const char *buf, size_t len, char *err, size_t errlen)
{
    json_t *a = json_array();
    size_t off = 0;
    for (;;) {
        while (off < len && isspace((unsigned char)buf[off]))
            off++;
        if (off >= len)
            return a;
        json_error_t je;
        json_t *v = json_loadb(buf + off, len - off, JSON_REJECT_DUPLICATES | JSON_DISABLE_EOF_CHECK, &je);
        if (!v) {
            int line = je.line;
            for (size_t i = 0; i < off; i++)
                line += buf[i] == '\n';
            util_errf(err, errlen, "line %d: JSON: %s", line, je.text);
            json_decref(a);
            return NULL;
        }
        json_array_append_new(a, v);
        off += (size_t)je.position;
    }
}

json_t *objfile_parse(const char *buf, size_t len, char *err, size_t errlen)
{
    size_t i = 0;
    while (i < len && isspace((unsigned char)buf[i]))
        i++;
    /* jansson is far faster than libyaml on a large snapshot */
    if (i < len && (buf[i] == '{' || buf[i] == '['))
        return parse_json(buf, len, err, errlen);
    yaml_parser_t p;
    if (!yaml_parser_initialize(&p)) {
        util_errf(err, errlen, "out of memory");
        return NULL;
    }
    yaml_parser_set_input_string(&p, (const unsigned char *)buf, len);
    json_t *out = json_array();
    for (;;) {
        yaml_document_t doc;
        if (!yaml_parser_load(&p, &doc)) {
            util_errf(err, errlen, "line %lu: YAML: %s", (unsigned long)p.problem_mark.line + 1,
                      p.problem ? p.problem : "parse error");
            json_decref(out);
            out = NULL;
            break;
        }
        yaml_node_t *root = yaml_document_get_root_node(&doc);
        if (!root) {
            yaml_document_delete(&doc);
            break; /* the stream's end */
        }
        yconv_t c = { &doc, 0, err, errlen };
        json_t *j = yconv(&c, root, 0);
        yaml_document_delete(&doc);
        if (!j) {
            json_decref(out);
            out = NULL;
            break;
        }
        if (json_is_null(j))
            json_decref(j); /* a document of only a comment or "---" */
        else
            json_array_append_new(out, j);
    }
    yaml_parser_delete(&p);
    return out;
}

static char *read_file(const char *path, size_t *len, char *err, size_t errlen)
{
    FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
    if (!f) {
        util_errf(err, errlen, "%s: %s", path, strerror(errno));
        return NULL;
    }
    sbuf_t b = { 0 };
    char chunk[65536];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) {
        if (b.len + n > OBJFILE_MAX_BYTES) {
            util_errf(err, errlen, "%s: larger than %u MiB", path, OBJFILE_MAX_BYTES >> 20);
            sbuf_free(&b);
            if (f != stdin)
                fclose(f);
            return NULL;
        }
        sbuf_append(&b, chunk, n);
    }
    int bad = ferror(f);
    if (f != stdin)
        fclose(f);
    if (bad) {
        util_errf(err, errlen, "%s: read error", path);
        sbuf_free(&b);
        return NULL;
    }
    if (!b.data)
        sbuf_append(&b, "", 0);
    *len = b.len;
    return b.data;
}

static json_t *load_docs(const char *path, char *err, size_t errlen)
{
    size_t len = 0;
    char e[400];
    char *buf = read_file(path, &len, err, errlen);
    if (!buf)
        return NULL;
    json_t *docs = objfile_parse(buf, len, e, sizeof e);
    free(buf);
    if (!docs)
        util_errf(err, errlen, "%s: %s", path, e);
    return docs;
}

static int add_object(json_t *out, json_t *o, const char *path, char *err, size_t errlen)
{
    if (!json_is_object(o) || !json_is_string(json_object_get(o, "kind")))
        return util_errf(err, errlen, "%s: document %zu is not a Kubernetes object (no kind)", path,
                         json_array_size(out) + 1);
    const char *kind = json_string_value(json_object_get(o, "kind"));
    size_t klen = strlen(kind);
    json_t *items = json_object_get(o, "items");
    if (klen >= 4 && !strcmp(kind + klen - 4, "List") && json_is_array(items)) {
        size_t i;
        json_t *it;
        json_array_foreach (items, i, it)
            if (add_object(out, it, path, err, errlen) < 0)
                return -1;
        return 0;
    }
    json_array_append(out, o);
    return 0;
}

json_t *objfile_load(const char *path, char *err, size_t errlen)
{
    json_t *docs = load_docs(path, err, errlen);
    if (!docs)
        return NULL;
    json_t *out = json_array();
    size_t i;
    json_t *d;
    json_array_foreach (docs, i, d) {
        if (json_is_array(d)) { /* a JSON array of objects */
            size_t k;
            json_t *x;
            json_array_foreach (d, k, x)
                if (add_object(out, x, path, err, errlen) < 0)
                    goto fail;
        } else if (add_object(out, d, path, err, errlen) < 0) {
            goto fail;
        }
    }
    json_decref(docs);
    if (json_array_size(out) == 0) {
        util_errf(err, errlen, "%s: no objects", path);
        json_decref(out);
        return NULL;
    }
    return out;
fail:
    json_decref(docs);
    json_decref(out);
    return NULL;
}

json_t *objfile_load_one(const char *path, char *err, size_t errlen)
{
    json_t *docs = load_docs(path, err, errlen);
    if (!docs)
        return NULL;
    json_t *one = NULL;
    if (json_array_size(docs) != 1)
        util_errf(err, errlen, "%s: %zu documents, one expected", path, json_array_size(docs));
    else
        one = json_incref(json_array_get(docs, 0));
    json_decref(docs);
    return one;
}
