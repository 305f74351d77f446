/* test_cel.c -- the DRA CEL evaluator (pkg/dra/cel.c): real selectors of
 * NVIDIA's and the example DRA driver, kube's map semantics, has() and in,
 * errors and their absorption by && and ||, every comparison on each type,
 * the constructs outside the subset (each named), and the bounds. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dra/cel.h"

/* A device of NVIDIA's driver as it publishes an A100 (attributes in its
 * domain and the common resource.kubernetes.io one). */
static dra_attr_t nv_attrs[] = {
    { .name = "gpu.nvidia.com/type", .kind = DRA_ATTR_STRING, .s = "gpu" },
    { .name = "gpu.nvidia.com/productName", .kind = DRA_ATTR_STRING, .s = "NVIDIA A100-SXM4-40GB" },
    { .name = "gpu.nvidia.com/architecture", .kind = DRA_ATTR_STRING, .s = "Ampere" },
    { .name = "gpu.nvidia.com/driverVersion", .kind = DRA_ATTR_VERSION, .s = "550.54.15" },
    { .name = "gpu.nvidia.com/cudaComputeCapability", .kind = DRA_ATTR_VERSION, .s = "8.0.0" },
    { .name = "gpu.nvidia.com/index", .kind = DRA_ATTR_INT, .i = 3 },
    { .name = "gpu.nvidia.com/migCapable", .kind = DRA_ATTR_BOOL, .b = 1 },
    { .name = "resource.kubernetes.io/pcieRoot", .kind = DRA_ATTR_STRING, .s = "pci0000:00" },
};
static dra_capacity_t nv_caps[] = {
    { .name = "gpu.nvidia.com/memory", .text = "40Gi", .milli = 40LL * 1024 * 1024 * 1024 * 1000 },
};
static const dra_device_t nv = {
    .driver = "gpu.nvidia.com",
    .pool = "node1",
    .name = "gpu-3",
    .attrs = nv_attrs,
    .nattrs = 8,
    .caps = nv_caps,
    .ncaps = 1,
};

/* A device of the example driver (kubernetes-sigs/dra-example-driver). */
static dra_attr_t ex_attrs[] = {
    { .name = "gpu.example.com/index", .kind = DRA_ATTR_INT, .i = 0 },
    { .name = "gpu.example.com/model", .kind = DRA_ATTR_STRING, .s = "LATEST-GPU-MODEL" },
    { .name = "gpu.example.com/uuid", .kind = DRA_ATTR_STRING, .s = "gpu-18db0e85-99e9-c746-8531-ffeb86328b39" },
    { .name = "gpu.example.com/driverVersion", .kind = DRA_ATTR_VERSION, .s = "1.0.0" },
    { .name = "gpu.example.com/broken", .kind = DRA_ATTR_VERSION, .s = "1.0" },
    { .name = "gpu.example.com/shared", .kind = DRA_ATTR_BOOL, .b = 0 },
};
static dra_capacity_t ex_caps[] = {
    { .name = "gpu.example.com/memory", .text = "80Gi", .milli = 80LL * 1024 * 1024 * 1024 * 1000 },
    { .name = "gpu.example.com/cores", .text = "1500m", .milli = 1500 },
};
static const dra_device_t ex = {
    .driver = "gpu.example.com",
    .pool = "node1",
    .name = "gpu-0",
    .attrs = ex_attrs,
    .nattrs = 6,
    .caps = ex_caps,
    .ncaps = 2,
    .multi = 1,
};

#define COMPILE_ERR (-2)

typedef struct {
    const char *expr;
    const dra_device_t *dev;
    int want;        /* 1, 0, -1 (runtime error), COMPILE_ERR */
    const char *msg; /* a part of the error, or NULL */
} cel_case_t;

/* Compiles and evaluates one case; the error text into err. */
static int run(const char *expr, const dra_device_t *dev, char *err, size_t n)
{
    dra_cel_t *c = dra_cel_compile(expr, err, n);
    if (!c)
        return COMPILE_ERR;
    int rc = dra_cel_eval(c, dev, err, n);
    dra_cel_free(c);
    return rc;
}

static void check(const cel_case_t *c, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        char err[256] = "";
        int rc = run(c[i].expr, c[i].dev ? c[i].dev : &ex, err, sizeof err);
        if (rc != c[i].want)
            fail_msg("%s: got %d want %d (%s)", c[i].expr, rc, c[i].want, err);
        if (c[i].msg && !strstr(err, c[i].msg))
            fail_msg("%s: error \"%s\" does not say \"%s\"", c[i].expr, err, c[i].msg);
        if ((rc == -1 || rc == COMPILE_ERR) && err[0] == '\0')
            fail_msg("%s: an error without a message", c[i].expr);
    }
}

static void test_real_selectors(void **state)
{
    (void)state;
    static const cel_case_t c[] = {
        { "device.driver == \"gpu.nvidia.com\" && device.attributes[\"gpu.nvidia.com\"].type == \"gpu\"", &nv, 1,
          NULL },
        { "device.driver == \"gpu.nvidia.com\" && device.attributes[\"gpu.nvidia.com\"].type == \"mig\"", &nv, 0,
          NULL },
        { "device.driver == 'gpu.nvidia.com'", &ex, 0, NULL },
        { "device.capacity[\"gpu.nvidia.com\"].memory.compareTo(quantity(\"40Gi\")) >= 0", &nv, 1, NULL },
        { "device.capacity[\"gpu.nvidia.com\"].memory.compareTo(quantity(\"41Gi\")) >= 0", &nv, 0, NULL },
        { "device.attributes[\"gpu.nvidia.com\"].productName.startsWith(\"NVIDIA A100\")", &nv, 1, NULL },
        { "device.attributes[\"gpu.nvidia.com\"].architecture == 'Ampere' && "
          "device.attributes[\"gpu.nvidia.com\"].cudaComputeCapability.isGreaterThan(semver('7.5.0'))",
          &nv, 1, NULL },
        { "device.attributes[\"gpu.nvidia.com\"].driverVersion.compareTo(semver(\"550.0.0\")) >= 0", &nv, 1, NULL },
        { "device.attributes[\"gpu.nvidia.com\"][\"index\"] == 3", &nv, 1, NULL },
        { "device.attributes[\"resource.kubernetes.io\"].pcieRoot == \"pci0000:00\"", &nv, 1, NULL },
        { "device.attributes[\"dra.example.com\"].driverVersion.isGreaterThan(semver(\"1.0.0\"))", &ex, -1,
          "no such key: dra.example.com/driverVersion" },
        { "device.attributes[\"gpu.example.com\"].driverVersion.isGreaterThan(semver(\"0.9.0\"))", &ex, 1, NULL },
        { "device.attributes[\"gpu.example.com\"].model == \"LATEST-GPU-MODEL\"", &ex, 1, NULL },
        { "device.capacity['gpu.example.com'].memory == quantity('80Gi')", &ex, 1, NULL },
        { "device.capacity['gpu.example.com'].memory.isGreaterThan(quantity('64Gi')) && "
          "device.capacity['gpu.example.com'].memory.isLessThan(quantity('81920Mi'))",
          &ex, 0, NULL },
        { "device.capacity['gpu.example.com'].cores == quantity('1.5')", &ex, 1, NULL },
        { "device.allowMultipleAllocations", &ex, 1, NULL },
        { "device.allowMultipleAllocations", &nv, 0, NULL },
        { "device.attributes['gpu.example.com'].index in [0, 1, 2] && !device.attributes['gpu.example.com'].shared",
          &ex, 1, NULL },
    };
    check(c, sizeof c / sizeof c[0]);
}

static void test_maps_has_in(void **state)
{
    (void)state;
    static const cel_case_t c[] = {
        /* kube: an unknown domain is an empty map, an unknown name an error */
        { "device.attributes[\"other.com\"].model == 'x'", NULL, -1, "no such key: other.com/model" },
        { "device.attributes.foo.model == 'x'", NULL, -1, "no such key: foo/model" },
        { "device.capacity[\"gpu.example.com\"].power.compareTo(quantity('1')) > 0", NULL, -1,
          "no such key: gpu.example.com/power" },
        { "has(device.attributes[\"other.com\"].model)", NULL, 0, NULL },
        { "has(device.attributes[\"gpu.example.com\"].model)", NULL, 1, NULL },
        { "has(device.attributes[\"gpu.example.com\"].modelx)", NULL, 0, NULL },
        { "has(device.capacity['gpu.example.com'].memory)", NULL, 1, NULL },
        { "has(device.capacity['gpu.example.com'].power)", NULL, 0, NULL },
        { "has(device.attributes['gpu.example.com'])", NULL, COMPILE_ERR, "has() macro" }, /* CEL: x.name only */
        /* kube: the outer maps find every domain, so has() of one is true */
        { "has(device.attributes.gpu)", NULL, 1, NULL },
        { "has(device.capacity.gpu)", NULL, 1, NULL },
        { "has(device.driver)", NULL, 1, NULL },
        { "has(device.attributes['gpu.example.com']['model'])", NULL, COMPILE_ERR, "has() macro" },
        { "has(device.attributes['gpu.example.com'].model) && device.attributes['gpu.example.com'].model == 'x'", NULL,
          0, NULL },
        { "!has(device.attributes['gpu.example.com'].nope) || device.attributes['gpu.example.com'].nope == 1", NULL, 1,
          NULL },
        { "'gpu.example.com' in device.attributes", NULL, 1, NULL },
        { "'gpu.example' in device.attributes", NULL, 0, NULL },
        { "'other.com' in device.attributes", NULL, 0, NULL },
        { "'gpu.example.com' in device.capacity", NULL, 1, NULL },
        { "'model' in device.attributes['gpu.example.com']", NULL, 1, NULL },
        { "'memory' in device.attributes['gpu.example.com']", NULL, 0, NULL },
        { "'memory' in device.capacity['gpu.example.com']", NULL, 1, NULL },
        { "'model' in device.attributes['other.com']", NULL, 0, NULL },
        { "device.attributes['gpu.example.com'].model in ['A', 'LATEST-GPU-MODEL']", NULL, 1, NULL },
        { "device.attributes['gpu.example.com'].model in ['A', 'B']", NULL, 0, NULL },
        { "device.attributes['gpu.example.com'].model in []", NULL, 0, NULL },
        { "device.driver in ['a', 1, true]", NULL, 0, NULL }, /* a list of mixed types is valid CEL */
        { "1 in device.attributes", NULL, COMPILE_ERR, "map key must be a string" },
        { "size(device.attributes['gpu.example.com']) == 6", NULL, 1, NULL },
        { "size(device.attributes) == 1 && size(device.capacity['gpu.example.com']) == 2", NULL, 1, NULL },
        { "size(device.attributes) == 2", &nv, 1, NULL },
        { "device.driver.size() == 15 && size('héllo') == 5 && size([1, 2]) == 2", NULL, 1, NULL },
        /* a key with a NUL (an escape) matches no name, and no name is read past its end */
        { "'gpu.example.com/model\\x00xyz' in device.attributes", NULL, 0, NULL },
        { "'model\\x00xyz' in device.attributes['gpu.example.com']", NULL, 0, NULL },
        { "device.attributes['gpu.example.com']['model\\x00'] == 'x'", NULL, -1, "no such key" },
        { "device.attributes[device.driver].model == 'LATEST-GPU-MODEL'", NULL, 1, NULL },
        { "device.attributes[device.driver][device.attributes[device.driver].uuid] == 1", NULL, -1, "no such key" },
        { "device.attributes[device.attributes[device.driver].index].x == 1", NULL, -1, "map index by int" },
    };
    check(c, sizeof c / sizeof c[0]);
}

static void test_errors_and_absorption(void **state)
{
    (void)state;
    static const cel_case_t c[] = {
        { "device.attributes['gpu.example.com'].nope == 1", NULL, -1, "no such key: gpu.example.com/nope" },
        { "false && device.attributes['gpu.example.com'].nope == 1", NULL, 0, NULL },
        { "device.attributes['gpu.example.com'].nope == 1 && false", NULL, 0, NULL },
        { "true || device.attributes['gpu.example.com'].nope == 1", NULL, 1, NULL },
        { "device.attributes['gpu.example.com'].nope == 1 || true", NULL, 1, NULL },
        { "device.attributes['gpu.example.com'].nope == 1 && true", NULL, -1, "no such key: gpu.example.com/nope" },
        { "device.attributes['gpu.example.com'].nope == 1 || false", NULL, -1, "no such key: gpu.example.com/nope" },
        /* the first error is the one reported */
        { "device.attributes['gpu.example.com'].a == 1 || device.attributes['gpu.example.com'].b == 1", NULL, -1,
          "no such key: gpu.example.com/a" },
        /* an absorbed error does not hide a later one's message */
        { "(device.attributes['gpu.example.com'].a == 1 && false) || device.attributes['x'].b == 1", NULL, -1,
          "no such key: x/b" },
        { "!(device.attributes['gpu.example.com'].nope == 1)", NULL, -1, "no such key" },
        { "device.attributes['gpu.example.com'].model < 3", NULL, -1, "no such overload: string < int" },
        { "device.attributes['gpu.example.com'].model == 3", NULL, 0, NULL }, /* different types: not equal */
        { "device.attributes['gpu.example.com'].model != 3", NULL, 1, NULL },
        { "device.attributes['gpu.example.com'].driverVersion == '1.0.0'", NULL, 0, NULL },
        { "device.attributes['gpu.example.com'].driverVersion == semver('1.0.0')", NULL, 1, NULL },
        { "device.attributes['gpu.example.com'].model && true", NULL, -1, "no such overload" },
        { "device.attributes['gpu.example.com'].model", NULL, -1, "selector did not return a bool" },
        { "device.attributes['gpu.example.com'].index", NULL, -1, "selector did not return a bool" },
        { "device.attributes['gpu.example.com'].model.compareTo(semver('1.0.0')) == 0", NULL, -1, "no such overload" },
        { "device.attributes['gpu.example.com'].driverVersion.compareTo(quantity('1')) == 0", NULL, -1,
          "no such overload" },
        { "device.attributes['gpu.example.com'].broken.major() == 1", NULL, -1, "not a semantic version" },
        { "device.attributes['gpu.example.com'].model.startsWith(1)", NULL, COMPILE_ERR, "no matching overload" },
        { "device.attributes['gpu.example.com'].model.startsWith(device.attributes['gpu.example.com'].index)", NULL, -1,
          "no such overload: string.startsWith(int)" },
        { "device.attributes['gpu.example.com'].model ? true : false", NULL, -1, "no such overload" },
        { "device.capacity['gpu.example.com'].cores.asInteger() == 1", NULL, -1, "cannot convert" },
        { "quantity(device.attributes['gpu.example.com'].model).sign() == 1", NULL, -1, "invalid quantity" },
        { "semver(device.attributes['gpu.example.com'].model).major() == 1", NULL, -1, "invalid semver" },
        { "device.driver", NULL, COMPILE_ERR, "returns string, not bool" },
        { "1 == 'a'", NULL, COMPILE_ERR, "no matching overload for '==' applied to (int, string)" },
        { "device.driver < 1", NULL, COMPILE_ERR, "no matching overload" },
        { "!device.driver", NULL, COMPILE_ERR, "no matching overload" },
        { "-device.driver == 1", NULL, COMPILE_ERR, "no matching overload" },
        { "device.driver && true", NULL, COMPILE_ERR, "needs a bool" },
        { "device.driver ? true : false", NULL, COMPILE_ERR, "needs a bool" },
        { "device.driver.compareTo('a') == 0", NULL, COMPILE_ERR, "no matching overload for 'compareTo' on string" },
        { "quantity('1').compareTo(semver('1.0.0')) == 0", NULL, COMPILE_ERR, "no matching overload" },
        { "device.driver.startsWith(1)", NULL, COMPILE_ERR, "no matching overload" },
        { "device.driver.startsWith()", NULL, COMPILE_ERR, "takes 1 argument" },
        { "device.gpu == 1", NULL, COMPILE_ERR, "undefined field 'gpu'" },
        { "device.driver.x == 1", NULL, COMPILE_ERR, "has no field 'x'" },
        { "gpu.driver == 1", NULL, COMPILE_ERR, "undeclared reference to 'gpu'" },
        { "quantity('10Zi').sign() == 1", NULL, COMPILE_ERR, "invalid quantity" },
        { "semver('1.0').major() == 1", NULL, COMPILE_ERR, "invalid semver" },
        { "semver('01.0.0').major() == 1", NULL, COMPILE_ERR, "invalid semver" },
        { "device.driver == ", NULL, COMPILE_ERR, "column 18" },
        { "device.driver == 'a' 'b'", NULL, COMPILE_ERR, "column 22" },
        { "(device.driver == 'a'", NULL, COMPILE_ERR, "expected ')'" },
        { "device.driver == 'abc", NULL, COMPILE_ERR, "unterminated string" },
        { "device.driver == 'a\\qb'", NULL, COMPILE_ERR, "invalid escape" },
        { "device.driver # 1", NULL, COMPILE_ERR, "unexpected character '#'" },
        { "", NULL, COMPILE_ERR, "unexpected end" },
        { "device.attributes == device.capacity", NULL, COMPILE_ERR, "comparing a map" },
        { "[1] == [1]", NULL, COMPILE_ERR, "comparing a list" },
        { "device.driver in 'abc'", NULL, COMPILE_ERR, "'in' needs a list or a map" },
    };
    check(c, sizeof c / sizeof c[0]);
}

static void test_unsupported_named(void **state)
{
    (void)state;
    static const cel_case_t c[] = {
        { "device.driver.matches('^gpu')", NULL, COMPILE_ERR, "the function 'matches' is not supported" },
        { "matches(device.driver, '^gpu')", NULL, COMPILE_ERR, "the function 'matches' is not supported" },
        { "[1, 2].all(x, x > 0)", NULL, COMPILE_ERR, "macro 'all' is not supported" },
        { "[1, 2].exists(x, x > 0)", NULL, COMPILE_ERR, "macro 'exists' is not supported" },
        { "[1, 2].exists_one(x, x > 0)", NULL, COMPILE_ERR, "macro 'exists_one' is not supported" },
        { "size([1, 2].map(x, x)) == 2", NULL, COMPILE_ERR, "macro 'map' is not supported" },
        { "size([1, 2].filter(x, x > 1)) == 1", NULL, COMPILE_ERR, "macro 'filter' is not supported" },
        { "[1, 2][0] == 1", NULL, COMPILE_ERR, "list index is not supported" },
        { "device.attributes['gpu.example.com'].index == 1.5", NULL, COMPILE_ERR, "double literals" },
        { "device.attributes['gpu.example.com'].index == 1e3", NULL, COMPILE_ERR, "double literals" },
        { "device.attributes['gpu.example.com'].index == 1u", NULL, COMPILE_ERR, "unsigned integer literals" },
        { "device.attributes['gpu.example.com'].index + 1 == 2", NULL, COMPILE_ERR, "operator '+' is not supported" },
        { "device.attributes['gpu.example.com'].index * 2 == 2", NULL, COMPILE_ERR, "operator '*' is not supported" },
        { "device.attributes['gpu.example.com'].index % 2 == 0", NULL, COMPILE_ERR, "operator '%' is not supported" },
        { "{'a': 1}['a'] == 1", NULL, COMPILE_ERR, "map literals are not supported" },
        { "device.driver == b'abc'", NULL, COMPILE_ERR, "bytes literals are not supported" },
        { "device.driver == r'abc'", NULL, COMPILE_ERR, "raw string literals are not supported" },
        { "device.driver == '''abc'''", NULL, COMPILE_ERR, "triple-quoted" },
        { "device.driver == null", NULL, COMPILE_ERR, "null is not supported" },
        { "timestamp('2024-01-01T00:00:00Z') != null", NULL, COMPILE_ERR, "the function 'timestamp' is not supported" },
        { "duration('1s') != null", NULL, COMPILE_ERR, "the function 'duration' is not supported" },
        { "device.driver.lowerAscii() == 'a'", NULL, COMPILE_ERR, "the function 'lowerAscii' is not supported" },
        { "device.capacity['gpu.example.com'].memory.asApproximateFloat() > 1", NULL, COMPILE_ERR,
          "the function 'asApproximateFloat' is not supported" },
        { "device.capacity['gpu.example.com'].memory.add(quantity('1')) == quantity('1')", NULL, COMPILE_ERR,
          "the function 'add' is not supported" },
        { "device.capacity['gpu.example.com'].memory < quantity('1Gi')", NULL, COMPILE_ERR,
          "operator '<' is not defined for quantity" },
        { "quantity('1Gi') >= device.capacity['gpu.example.com'].memory", NULL, COMPILE_ERR,
          "operator '>=' is not defined for quantity" },
        { "semver('1.0.0') < semver('2.0.0')", NULL, COMPILE_ERR, "operator '<' is not defined for semver" },
        { "device.attributes['gpu.example.com'].driverVersion < semver('2.0.0')", NULL, COMPILE_ERR,
          "operator '<' is not defined for semver" },
        /* a dynamic one is refused when it runs */
        { "device.attributes['gpu.example.com'].driverVersion > device.attributes['gpu.example.com'].driverVersion",
          NULL, -1, "no such overload: semver > semver" },
        { "device.attributes[?'gpu.example.com'].model == 'a'", NULL, COMPILE_ERR, "optional index" },
        { "device.attributes.?foo == 'a'", NULL, COMPILE_ERR, "optional field" },
        { "device.driver.has(x)", NULL, COMPILE_ERR, "the function 'has' is not supported" },
    };
    check(c, sizeof c / sizeof c[0]);
}

/* cel.bind, as kube's DRA environment enables it (ext.Bindings). */
static void test_bind(void **state)
{
    (void)state;
    static const cel_case_t c[] = {
        { "cel.bind(d, device.attributes['gpu.example.com'], d.model == 'LATEST-GPU-MODEL' && d.index == 0)", NULL, 1,
          NULL },
        { "cel.bind(d, device.attributes['gpu.nvidia.com'], d.type == 'gpu' && "
          "cel.bind(m, device.capacity['gpu.nvidia.com'].memory, m.isGreaterThan(quantity('32Gi')) && "
          "m.isLessThan(quantity('48Gi'))))",
          &nv, 1, NULL },
        { "cel.bind(d, device.attributes['gpu.example.com'], has(d.model) && !has(d.nope) && 'uuid' in d)", NULL, 1,
          NULL },
        /* a variable shadows, and goes out of scope after its body */
        { "cel.bind(device, 1, device == 1)", NULL, 1, NULL },
        { "cel.bind(x, 1, x == 1) && x == 1", NULL, COMPILE_ERR, "undeclared reference to 'x'" },
        { "cel.bind(x, 'a', x == 1)", NULL, COMPILE_ERR, "no matching overload" },
        /* an error bound is reported when used, with its own message */
        { "cel.bind(x, device.attributes['gpu.example.com'].nope, false && x == 1)", NULL, 0, NULL },
        { "cel.bind(x, device.attributes['gpu.example.com'].nope, device.attributes['y'].z == 1 || x == 1)", NULL, -1,
          "no such key: y/z" },
        { "cel.bind(x, device.attributes['gpu.example.com'].nope, true && x == 1)", NULL, -1,
          "no such key: gpu.example.com/nope" },
        { "cel.bind(1, 1, true)", NULL, COMPILE_ERR, "expected a variable name" },
        { "cel.bind(x, 1)", NULL, COMPILE_ERR, "expected ','" },
        { "cel.index(x) == 1", NULL, COMPILE_ERR, "the function 'cel.index' is not supported" },
        { "cel.bind(a, 1, cel.bind(b, 2, cel.bind(c, 3, cel.bind(d, 4, cel.bind(e, 5, cel.bind(f, 6, "
          "cel.bind(g, 7, cel.bind(h, 8, a + h == 9))))))))",
          NULL, COMPILE_ERR, "operator '+'" },
        { "cel.bind(a, 1, cel.bind(b, 2, cel.bind(c, 3, cel.bind(d, 4, cel.bind(e, 5, cel.bind(f, 6, "
          "cel.bind(g, 7, cel.bind(h, 8, a < h))))))))",
          NULL, 1, NULL },
        { "cel.bind(a, 1, cel.bind(b, 2, cel.bind(c, 3, cel.bind(d, 4, cel.bind(e, 5, cel.bind(f, 6, "
          "cel.bind(g, 7, cel.bind(h, 8, cel.bind(i, 9, a < i)))))))))",
          NULL, COMPILE_ERR, "cel.bind is nested deeper than 8" },
    };
    check(c, sizeof c / sizeof c[0]);
}

static void test_literals_and_ints(void **state)
{
    (void)state;
    static const cel_case_t c[] = {
        { "9223372036854775807 > 0", NULL, 1, NULL },
        { "-9223372036854775808 < 0", NULL, 1, NULL },
        { "0x7fffffffffffffff == 9223372036854775807", NULL, 1, NULL },
        { "9223372036854775808 > 0", NULL, COMPILE_ERR, "integer literal out of range" },
        { "18446744073709551616 > 0", NULL, COMPILE_ERR, "integer literal out of range" },
        { "0x8000000000000000 > 0", NULL, COMPILE_ERR, "integer literal out of range" },
        { "-(-9223372036854775808) > 0", NULL, -1, "integer overflow" },
        { "-(-3) == 3 && - -3 == 3 && -device.attributes['gpu.example.com'].index == 0", NULL, 1, NULL },
        { "'a\\\"b\\'c\\\\d\\ne' == \"a\\\"b'c\\\\d\\ne\"", NULL, 1, NULL },
        { "size('\\n\\t') == 2 && '\\x41\\u00e9\\101' == 'Aé' + ''", NULL, COMPILE_ERR, "operator '+'" },
        { "'\\x41\\u00e9\\101\\U0001F600' == 'AéA😀'", NULL, 1, NULL },
        { "'\\ud800' == 'a'", NULL, COMPILE_ERR, "invalid code point" },
        { "true == !false && !!true", NULL, 1, NULL },
        { "isQuantity('1Gi') && !isQuantity('1Gx') && isSemver('1.2.3-rc.1+b5') && !isSemver('v1.2.3')", NULL, 1,
          NULL },
        { "isQuantity(device.attributes['gpu.example.com'].uuid)", NULL, 0, NULL },
        { "quantity('1500m').asInteger() == 1", NULL, -1, "cannot convert" },
        { "quantity('2k').asInteger() == 2000 && quantity('1500m').isInteger() == false", NULL, 1, NULL },
        { "quantity('-1').sign() == -1 && quantity('0').sign() == 0 && quantity('1m').sign() == 1", NULL, 1, NULL },
        { "semver('1.2.3').major() == 1 && semver('1.2.3').minor() == 2 && semver('1.2.3').patch() == 3", NULL, 1,
          NULL },
        { "device.attributes['gpu.example.com'].index == 0 ? device.driver == 'gpu.example.com' : false", NULL, 1,
          NULL },
        { "false ? device.attributes['gpu.example.com'].nope == 1 : true", NULL, 1, NULL },
        { "true ? false : true ? true : true", NULL, 0, NULL },
        { " .device.driver.endsWith('.com') && device.driver.contains('example') && device.driver.contains('')", NULL,
          1, NULL },
        { "device.driver.endsWith('gpu.example.com.x') || device.driver.startsWith('x')", NULL, 0, NULL },
    };
    check(c, sizeof c / sizeof c[0]);
}

/* Every comparison operator on each type; want[] in op order. */
static void test_every_comparison(void **state)
{
    (void)state;
    static const char *const ops[] = { "==", "!=", "<", "<=", ">", ">=" };
    static const struct {
        const char *a, *b;
        int want[6];
    } cmp[] = {
        { "1", "2", { 0, 1, 1, 1, 0, 0 } },
        { "2", "2", { 1, 0, 0, 1, 0, 1 } },
        { "-3", "-4", { 0, 1, 0, 0, 1, 1 } },
        { "device.attributes['gpu.example.com'].index", "0", { 1, 0, 0, 1, 0, 1 } },
        { "'abc'", "'abd'", { 0, 1, 1, 1, 0, 0 } },
        { "'ab'", "'abc'", { 0, 1, 1, 1, 0, 0 } },
        { "'b'", "'abc'", { 0, 1, 0, 0, 1, 1 } },
        { "device.driver", "'gpu.example.com'", { 1, 0, 0, 1, 0, 1 } },
        { "false", "true", { 0, 1, 1, 1, 0, 0 } },
        { "true", "true", { 1, 0, 0, 1, 0, 1 } },
        { "device.attributes['gpu.example.com'].shared", "false", { 1, 0, 0, 1, 0, 1 } },
    };
    for (size_t i = 0; i < sizeof cmp / sizeof cmp[0]; i++)
        for (int o = 0; o < 6; o++) {
            char expr[256], err[256] = "";
            snprintf(expr, sizeof expr, "%s %s %s", cmp[i].a, ops[o], cmp[i].b);
            int rc = run(expr, &ex, err, sizeof err);
            if (rc != cmp[i].want[o])
                fail_msg("%s: got %d want %d (%s)", expr, rc, cmp[i].want[o], err);
        }
    /* quantities and semvers: ==, != and the methods (compareTo, isGreaterThan, isLessThan) */
    static const struct {
        const char *a, *b;
        int c; /* compareTo */
    } ord[] = {
        { "quantity('1Gi')", "quantity('1024Mi')", 0 },
        { "quantity('1G')", "quantity('1Gi')", -1 },
        { "quantity('500m')", "quantity('0.5')", 0 },
        { "quantity('2')", "quantity('1999m')", 1 },
        { "device.capacity['gpu.example.com'].memory", "quantity('80Gi')", 0 },
        { "device.capacity['gpu.example.com'].cores", "quantity('2')", -1 },
        { "semver('1.2.3')", "semver('1.2.3')", 0 },
        { "semver('1.2.3')", "semver('1.10.0')", -1 },
        { "semver('2.0.0')", "semver('1.99.99')", 1 },
        { "semver('1.0.0+build.1')", "semver('1.0.0+build.2')", 0 },
        /* semver.org 2.0 section 11's chain */
        { "semver('1.0.0-alpha')", "semver('1.0.0-alpha.1')", -1 },
        { "semver('1.0.0-alpha.1')", "semver('1.0.0-alpha.beta')", -1 },
        { "semver('1.0.0-alpha.beta')", "semver('1.0.0-beta')", -1 },
        { "semver('1.0.0-beta')", "semver('1.0.0-beta.2')", -1 },
        { "semver('1.0.0-beta.2')", "semver('1.0.0-beta.11')", -1 },
        { "semver('1.0.0-beta.11')", "semver('1.0.0-rc.1')", -1 },
        { "semver('1.0.0-rc.1')", "semver('1.0.0')", -1 },
        { "semver('1.0.0')", "semver('1.0.0-rc.1')", 1 },
        { "device.attributes['gpu.example.com'].driverVersion", "semver('1.0.0')", 0 },
        { "device.attributes['gpu.example.com'].driverVersion", "semver('1.0.1-rc.0')", -1 },
    };
    for (size_t i = 0; i < sizeof ord / sizeof ord[0]; i++) {
        char expr[512], err[256] = "";
        snprintf(expr, sizeof expr,
                 "%s.compareTo(%s) == %d && (%s == %s) == %s && (%s != %s) == %s && %s.isGreaterThan(%s) == %s && "
                 "%s.isLessThan(%s) == %s",
                 ord[i].a, ord[i].b, ord[i].c, ord[i].a, ord[i].b, ord[i].c == 0 ? "true" : "false", ord[i].a, ord[i].b,
                 ord[i].c != 0 ? "true" : "false", ord[i].a, ord[i].b, ord[i].c > 0 ? "true" : "false", ord[i].a,
                 ord[i].b, ord[i].c < 0 ? "true" : "false");
        int rc = run(expr, &ex, err, sizeof err);
        if (rc != 1)
            fail_msg("%s: got %d (%s)", expr, rc, err);
    }
}

static char *repeat(const char *head, const char *unit, int n, const char *tail)
{
    size_t len = strlen(head) + strlen(unit) * (size_t)n + strlen(tail) + 1;
    char *s = malloc(len);
    assert_non_null(s);
    strcpy(s, head);
    for (int i = 0; i < n; i++)
        strcat(s, unit);
    strcat(s, tail);
    return s;
}

static void test_bounds(void **state)
{
    (void)state;
    char err[256];
    /* length: 10240 bytes compile (spaces), one more does not */
    char *s = repeat("true", " ", DRA_CEL_MAX_LEN - 4, "");
    dra_cel_t *c = dra_cel_compile(s, err, sizeof err);
    assert_non_null(c);
    dra_cel_free(c);
    free(s);
    s = repeat("true", " ", DRA_CEL_MAX_LEN - 3, "");
    assert_null(dra_cel_compile(s, err, sizeof err));
    assert_non_null(strstr(err, "more than 10240"));
    free(s);

    /* nodes: a chain of 1023 operands under one && is 1024 nodes */
    s = repeat("true", " && true", 1022, "");
    c = dra_cel_compile(s, err, sizeof err);
    assert_non_null(c);
    assert_int_equal(dra_cel_nodes(c), 1024);
    assert_int_equal(dra_cel_eval(c, &ex, err, sizeof err), 1);
    dra_cel_free(c);
    free(s);
    s = repeat("true", " && true", 1023, "");
    assert_null(dra_cel_compile(s, err, sizeof err));
    assert_non_null(strstr(err, "more than 1024 nodes"));
    free(s);
    /* a long || of real clauses is cheap to evaluate: its cost is its nodes */
    s = repeat("false", " || device.attributes['gpu.example.com'].index == 7", 100, "");
    c = dra_cel_compile(s, err, sizeof err);
    assert_non_null(c);
    assert_int_equal(dra_cel_nodes(c), 1 + 1 + 100 * 7);
    assert_int_equal(dra_cel_eval(c, &ex, err, sizeof err), 0);
    dra_cel_free(c);
    free(s);

    /* depth: parentheses and unary operators nest at most 64 deep */
    s = repeat("", "(", 63, "true");
    char *t = repeat(s, ")", 63, "");
    c = dra_cel_compile(t, err, sizeof err);
    assert_non_null(c);
    dra_cel_free(c);
    free(s);
    free(t);
    s = repeat("", "(", 64, "true");
    t = repeat(s, ")", 64, "");
    assert_null(dra_cel_compile(t, err, sizeof err));
    assert_non_null(strstr(err, "nested deeper than 64"));
    free(s);
    free(t);
    s = repeat("", "!", 62, "true");
    c = dra_cel_compile(s, err, sizeof err);
    assert_non_null(c);
    assert_int_equal(dra_cel_eval(c, &ex, err, sizeof err), 1);
    dra_cel_free(c);
    free(s);
    s = repeat("", "!", 5000, "true");
    assert_null(dra_cel_compile(s, err, sizeof err));
    assert_non_null(strstr(err, "nested deeper than 64"));
    free(s);
    /* comparisons chain left-deep: the AST height bound catches them */
    s = repeat("true", " == true", 70, "");
    assert_null(dra_cel_compile(s, err, sizeof err));
    assert_non_null(strstr(err, "nested deeper than 64"));
    free(s);
    s = repeat("", "[", 100, "");
    assert_null(dra_cel_compile(s, err, sizeof err));
    free(s);
}

static void test_api_edges(void **state)
{
    (void)state;
    char err[64];
    assert_null(dra_cel_compile(NULL, err, sizeof err));
    assert_null(dra_cel_compile("device.driver ==", NULL, 0)); /* no buffer: still refused */
    dra_cel_t *c = dra_cel_compile("device.attributes['x'].y == 1", NULL, 0);
    assert_non_null(c);
    assert_int_equal(dra_cel_nodes(c), 7);
    assert_int_equal(dra_cel_eval(c, &ex, NULL, 0), -1);
    /* a short buffer truncates the message, never overflows */
    assert_int_equal(dra_cel_eval(c, &ex, err, 8), -1);
    assert_int_equal(strlen(err), 7);
    assert_int_equal(dra_cel_eval(c, NULL, err, sizeof err), -1);
    dra_cel_free(c);
    dra_cel_free(NULL);
    assert_int_equal(dra_cel_nodes(NULL), 0);
    /* a device without driver or attributes */
    dra_device_t bare = { 0 };
    assert_int_equal(
        run("device.driver == '' && !('a' in device.attributes) && size(device.capacity) == 0", &bare, err, sizeof err),
        1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_real_selectors),
        cmocka_unit_test(test_maps_has_in),
        cmocka_unit_test(test_errors_and_absorption),
        cmocka_unit_test(test_unsupported_named),
        cmocka_unit_test(test_literals_and_ints),
        cmocka_unit_test(test_bind),
        cmocka_unit_test(test_every_comparison),
        cmocka_unit_test(test_bounds),
        cmocka_unit_test(test_api_edges),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
