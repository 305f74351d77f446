/* kubeconfig.c -- finds the API server and credentials: kubeconfig files
 * (parsed with libyaml's document API) and the in-cluster service account. */
#include "kube/kubeconfig.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml.h>
#include <openssl/evp.h>

#include "util/util.h"

#define SA_DIR_DEFAULT "/var/run/secrets/kubernetes.io/serviceaccount"

/* ---- base64 ---------------------------------------------------------- */

static int b64_char_ok(unsigned char ch)
{
    return (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '+' || ch == '/';
}

/* EVP_DecodeBlock wants whitespace-free, padded input and counts padding as
 * output bytes, so normalise first and trim afterwards. */
char *kube_base64_decode(const char *in, size_t *outlen)
{
    size_t n = strlen(in), len = 0, pad = 0;
    char *clean = util_xmalloc(n + 4);
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)in[i];
        if (ch == ' ' || ch == '\n' || ch == '\r' || ch == '\t')
            continue;
        if (ch == '=') {
            pad++;
            continue;
        }
        if (pad || !b64_char_ok(ch)) {
            free(clean);
            return NULL;
        } /* data after '=' */
        clean[len++] = (char)ch;
    }
    if (len % 4 == 1 || pad > 2) {
        free(clean);
        return NULL;
    }
    size_t used = len;
    while (len % 4)
        clean[len++] = '=';
    clean[len] = '\0';
    unsigned char *out = util_xmalloc(len / 4 * 3 + 1);
    int got = len ? EVP_DecodeBlock(out, (unsigned char *)clean, (int)len) : 0;
    free(clean);
    if (got < 0) {
        free(out);
        return NULL;
    }
    size_t real = used / 4 * 3 + (used % 4 ? used % 4 - 1 : 0);
    out[real] = '\0';
    if (outlen)
        *outlen = real;
    return (char *)out;
}

/* ---- small helpers --------------------------------------------------- */

static int file_exists(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

/* Relative paths in a kubeconfig are relative to the file's directory. */
static char *resolve_path(const char *base_file, const char *p)
{
    if (p[0] == '/')
        return util_strdup(p);
    if (p[0] == '~' && p[1] == '/' && getenv("HOME")) {
        sbuf_t b = { 0 };
        sbuf_printf(&b, "%s%s", getenv("HOME"), p + 1);
        return b.data;
    }
    const char *slash = strrchr(base_file, '/');
    if (!slash)
        return util_strdup(p);
    sbuf_t b = { 0 };
    sbuf_append(&b, base_file, (size_t)(slash - base_file) + 1);
    sbuf_puts(&b, p);
    return b.data;
}

/* ---- YAML tree lookups ----------------------------------------------- */

static yaml_node_t *map_get(yaml_document_t *d, yaml_node_t *m, const char *key)
{
    if (!m || m->type != YAML_MAPPING_NODE)
        return NULL;
    for (yaml_node_pair_t *p = m->data.mapping.pairs.start; p < m->data.mapping.pairs.top; p++) {
        yaml_node_t *k = yaml_document_get_node(d, p->key);
        if (k && k->type == YAML_SCALAR_NODE && strcmp((char *)k->data.scalar.value, key) == 0)
            return yaml_document_get_node(d, p->value);
    }
    return NULL;
}

/* Scalar value or NULL (also NULL for the empty scalar, YAML's "null"). */
static const char *map_str(yaml_document_t *d, yaml_node_t *m, const char *key)
{
    yaml_node_t *v = map_get(d, m, key);
    if (!v || v->type != YAML_SCALAR_NODE || v->data.scalar.length == 0)
        return NULL;
    const char *s = (const char *)v->data.scalar.value;
    if (v->data.scalar.style == YAML_PLAIN_SCALAR_STYLE && (!strcmp(s, "null") || !strcmp(s, "~")))
        return NULL;
    return s;
}

/* Finds {name: <name>, <field>: {...}} in the sequence m[list]. */
static yaml_node_t *named_entry(yaml_document_t *d, yaml_node_t *root, const char *list, const char *field,
                                const char *name)
{
    yaml_node_t *seq = map_get(d, root, list);
    if (!seq || seq->type != YAML_SEQUENCE_NODE)
        return NULL;
    for (yaml_node_item_t *it = seq->data.sequence.items.start; it < seq->data.sequence.items.top; it++) {
        yaml_node_t *e = yaml_document_get_node(d, *it);
        const char *n = map_str(d, e, "name");
        if (n && strcmp(n, name) == 0) {
            yaml_node_t *inner = map_get(d, e, field);
            return inner && inner->type == YAML_MAPPING_NODE ? inner : NULL;
        }
    }
    return NULL;
}

static int truthy(const char *s)
{
    return s && (!strcasecmp(s, "true") || !strcasecmp(s, "yes") || !strcasecmp(s, "on") || !strcmp(s, "1"));
}

/* Takes "<field>-data" (base64) over "<field>" (path). */
static int take_pem(yaml_document_t *d, yaml_node_t *m, const char *field, const char *file, char **pem, char **path,
                    char *err, size_t errlen)
{
    char key[96];
    snprintf(key, sizeof key, "%s-data", field);
    const char *data = map_str(d, m, key);
    if (data) {
        *pem = kube_base64_decode(data, NULL);
        if (!*pem) {
            util_errf(err, errlen, "kubeconfig %s: %s is not valid base64", file, key);
            return -1;
        }
        return 0;
    }
    const char *p = map_str(d, m, field);
    if (p)
        *path = resolve_path(file, p);
    return 0;
}

/* ---- file loading ---------------------------------------------------- */

static int load_doc(const char *file, yaml_document_t *doc, char *err, size_t errlen)
{
    FILE *f = fopen(file, "rb");
    if (!f) {
        util_errf(err, errlen, "kubeconfig %s: cannot open: %s", file, strerror(errno));
        return -1;
    }
    yaml_parser_t p;
    if (!yaml_parser_initialize(&p)) {
        fclose(f);
        util_errf(err, errlen, "kubeconfig %s: out of memory", file);
        return -1;
    }
    yaml_parser_set_input_file(&p, f);
    int ok = yaml_parser_load(&p, doc);
    if (!ok) {
        util_errf(err, errlen, "kubeconfig %s: YAML syntax error at line %zu: %s%s%s", file, p.problem_mark.line + 1,
                  p.problem ? p.problem : "invalid document", p.context ? " " : "", p.context ? p.context : "");
    }
    yaml_parser_delete(&p);
    fclose(f);
    return ok ? 0 : -1;
}

static int fill_from_doc(kube_config_t *c, const char *file, yaml_document_t *d, char *err, size_t errlen)
{
    yaml_node_t *root = yaml_document_get_root_node(d);
    if (!root || root->type != YAML_MAPPING_NODE) {
        util_errf(err, errlen, "kubeconfig %s: empty or not a mapping", file);
        return -1;
    }
    const char *cur = map_str(d, root, "current-context");
    if (!cur) {
        util_errf(err, errlen, "kubeconfig %s: no current-context", file);
        return -1;
    }
    yaml_node_t *ctx = named_entry(d, root, "contexts", "context", cur);
    if (!ctx) {
        util_errf(err, errlen, "kubeconfig %s: context \"%s\" not found", file, cur);
        return -1;
    }
    const char *cname = map_str(d, ctx, "cluster"), *uname = map_str(d, ctx, "user");
    if (!cname) {
        util_errf(err, errlen, "kubeconfig %s: context \"%s\" names no cluster", file, cur);
        return -1;
    }
    yaml_node_t *cl = named_entry(d, root, "clusters", "cluster", cname);
    if (!cl) {
        util_errf(err, errlen, "kubeconfig %s: cluster \"%s\" not found", file, cname);
        return -1;
    }
    const char *server = map_str(d, cl, "server");
    if (!server) {
        util_errf(err, errlen, "kubeconfig %s: cluster \"%s\" has no server", file, cname);
        return -1;
    }
    c->server = util_strdup(server);
    for (size_t n = strlen(c->server); n > 0 && c->server[n - 1] == '/'; n--)
        c->server[n - 1] = '\0';
    c->insecure = truthy(map_str(d, cl, "insecure-skip-tls-verify"));
    if (take_pem(d, cl, "certificate-authority", file, &c->ca_pem, &c->ca_file, err, errlen))
        return -1;
    if (!uname)
        return 0; /* anonymous access is allowed */
    yaml_node_t *u = named_entry(d, root, "users", "user", uname);
    if (!u) {
        util_errf(err, errlen, "kubeconfig %s: user \"%s\" not found", file, uname);
        return -1;
    }
    if (take_pem(d, u, "client-certificate", file, &c->cert_pem, &c->cert_file, err, errlen))
        return -1;
    if (take_pem(d, u, "client-key", file, &c->key_pem, &c->key_file, err, errlen))
        return -1;
    const char *tok = map_str(d, u, "token"), *tf = map_str(d, u, "tokenFile");
    if (tok)
        c->token = util_strdup(tok);
    else if (tf)
        c->token_file = resolve_path(file, tf);
    return 0;
}

int kube_config_parse(kube_config_t *c, const char *data, size_t len, const char *source, char *err, size_t errlen)
{
    memset(c, 0, sizeof(*c));
    yaml_parser_t p;
    yaml_document_t doc;
    if (!yaml_parser_initialize(&p)) {
        util_errf(err, errlen, "kubeconfig %s: out of memory", source);
        return -1;
    }
    yaml_parser_set_input_string(&p, (const unsigned char *)data, len);
    int ok = yaml_parser_load(&p, &doc);
    if (!ok)
        util_errf(err, errlen, "kubeconfig %s: YAML syntax error at line %zu: %s", source, p.problem_mark.line + 1,
                  p.problem ? p.problem : "invalid document");
    yaml_parser_delete(&p);
    if (!ok)
        return -1;
    int rc = fill_from_doc(c, "", &doc, err, errlen);
    yaml_document_delete(&doc);
    /* Whoever wrote the buffer must not make us read our own files: a
     * tokenFile naming our service-account token would hand it to their
     * server. Only inline credentials. */
    if (rc == 0 && (c->ca_file || c->cert_file || c->key_file || c->token_file)) {
        util_errf(err, errlen,
                  "kubeconfig : file references (certificate-authority, client-certificate, "
                  "client-key, tokenFile) are not allowed here; use the -data fields or token");
        rc = -1;
    }
    if (rc != 0) {
        /* fill_from_doc named the file ""; say where the config came from */
        char why[400];
        snprintf(why, sizeof why, "%s", err);
        const char *rest = strncmp(why, "kubeconfig : ", 13) == 0 ? why + 13 : why;
        util_errf(err, errlen, "kubeconfig %s: %s", source, rest);
        kube_config_free(c);
        return -1;
    }
    c->source = util_strdup(source);
    return 0;
}

static int load_file(kube_config_t *c, const char *file, char *err, size_t errlen)
{
    yaml_document_t doc;
    if (load_doc(file, &doc, err, errlen))
        return -1;
    int rc = fill_from_doc(c, file, &doc, err, errlen);
    yaml_document_delete(&doc);
    if (rc == 0)
        c->source = util_strdup(file);
    return rc;
}

static int load_in_cluster(kube_config_t *c, char *err, size_t errlen)
{
    const char *host = getenv("KUBERNETES_SERVICE_HOST"), *port = getenv("KUBERNETES_SERVICE_PORT");
    if (!host || !*host) {
        util_errf(err, errlen,
                  "no kubeconfig: pass --kubeconfig or set KUBECONFIG (~/.kube/config not found, "
                  "and not in a cluster: KUBERNETES_SERVICE_HOST unset)");
        return -1;
    }
    const char *dir = getenv("AISCHED_SA_DIR");
    if (!dir || !*dir)
        dir = SA_DIR_DEFAULT;
    sbuf_t b = { 0 };
    sbuf_printf(&b, "%s/token", dir);
    if (access(b.data, R_OK) != 0) {
        util_errf(err, errlen, "in-cluster config: cannot read %s: %s", b.data, strerror(errno));
        sbuf_free(&b);
        return -1;
    }
    c->token_file = b.data;
    sbuf_t ca = { 0 };
    sbuf_printf(&ca, "%s/ca.crt", dir);
    if (file_exists(ca.data))
        c->ca_file = ca.data;
    else
        sbuf_free(&ca);
    sbuf_t s = { 0 };
    int v6 = strchr(host, ':') != NULL; /* IPv6 literal needs brackets in a URL */
    sbuf_printf(&s, "https://%s%s%s:%s", v6 ? "[" : "", host, v6 ? "]" : "", port && *port ? port : "443");
    c->server = s.data;
    c->source = util_strdup("in-cluster");
    return 0;
}

/* First non-empty entry of $KUBECONFIG (a ':'-separated list). */
static char *kubeconfig_env(void)
{
    const char *e = getenv("KUBECONFIG");
    if (!e)
        return NULL;
    while (*e) {
        const char *end = strchr(e, ':');
        size_t n = end ? (size_t)(end - e) : strlen(e);
        if (n)
            return util_strndup(e, n);
        if (!end)
            break;
        e = end + 1;
    }
    return NULL;
}

int kube_config_load(kube_config_t *c, const char *path, char *err, size_t errlen)
{
    memset(c, 0, sizeof *c);
    int rc;
    if (path) {
        rc = load_file(c, path, err, errlen);
    } else {
        char *env = kubeconfig_env();
        if (env) {
            rc = load_file(c, env, err, errlen);
            free(env);
        } else {
            const char *home = getenv("HOME");
            sbuf_t b = { 0 };
            if (home && *home)
                sbuf_printf(&b, "%s/.kube/config", home);
            if (b.data && file_exists(b.data))
                rc = load_file(c, b.data, err, errlen);
            else
                rc = load_in_cluster(c, err, errlen);
            sbuf_free(&b);
        }
    }
    if (rc)
        kube_config_free(c);
    return rc;
}

int kube_config_copy(kube_config_t *dst, const kube_config_t *src)
{
    dst->server = util_strdup_or_null(src->server);
    dst->ca_file = util_strdup_or_null(src->ca_file);
    dst->ca_pem = util_strdup_or_null(src->ca_pem);
    dst->cert_file = util_strdup_or_null(src->cert_file);
    dst->cert_pem = util_strdup_or_null(src->cert_pem);
    dst->key_file = util_strdup_or_null(src->key_file);
    dst->key_pem = util_strdup_or_null(src->key_pem);
    dst->token = util_strdup_or_null(src->token);
    dst->token_file = util_strdup_or_null(src->token_file);
    dst->insecure = src->insecure;
    dst->source = util_strdup_or_null(src->source);
    return 0;
}

void kube_config_free(kube_config_t *c)
{
    if (!c)
        return;
    /* Secrets do not linger in freed memory. */
    if (c->token)
        OPENSSL_cleanse(c->token, strlen(c->token));
    if (c->key_pem)
        OPENSSL_cleanse(c->key_pem, strlen(c->key_pem));
    free(c->server);
    free(c->ca_file);
    free(c->ca_pem);
    free(c->cert_file);
    free(c->cert_pem);
    free(c->key_file);
    free(c->key_pem);
    free(c->token);
    free(c->token_file);
    free(c->source);
    memset(c, 0, sizeof *c);
}
