/* A Secret Service lookup without a client library, for
 * scripts/bench-secret-service: the same two calls libsecret makes for
 * secret_password_lookup (Service.SearchItems, then Service.GetSecrets),
 * made with GDBus's call_sync on one connection to the session bus, with a
 * plain session, and the floor under them: two Peer.Ping round trips to
 * the same provider, which its D-Bus library answers itself.
 *
 * The difference between the two is what the provider takes (its work and
 * its threads), with neither the bus's round trips nor a client library's
 * work in it.
 *
 * Usage: secret-service-probe COUNT UPTO SEED SCHEMA
 * Looks up COUNT random items n in [0, UPTO) (attributes app=bench, n=N,
 * xdg:schema=SCHEMA), checks each secret is "secret-%08d-" followed by 23
 * x's, and prints one JSON line: {"raw": [ns...], "ping": [ns...]}.
 * Exit 1 with a message on any failure. */
#include <gio/gio.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *const BUS_NAME = "org.freedesktop.secrets";
static const char *const SERVICE_PATH = "/org/freedesktop/secrets";
static const char *const SERVICE = "org.freedesktop.Secret.Service";

static long long now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

static GVariant *call(GDBusConnection *bus, const char *interface, const char *method, GVariant *arguments,
                      const char *reply) {
    GError *error = NULL;
    GVariant *result = g_dbus_connection_call_sync(bus, BUS_NAME, SERVICE_PATH, interface, method, arguments,
                                                   reply ? G_VARIANT_TYPE(reply) : NULL, G_DBUS_CALL_FLAGS_NONE, -1,
                                                   NULL, &error);
    if (result == NULL) {
        fprintf(stderr, "secret-service-probe: %s.%s: %s\n", interface, method, error->message);
        exit(1);
    }
    return result;
}

int main(int argc, char **argv) {
    if (argc != 5) {
        fprintf(stderr, "usage: secret-service-probe COUNT UPTO SEED SCHEMA\n");
        return 64;
    }
    int count = atoi(argv[1]), upto = atoi(argv[2]);
    srandom((unsigned)atoi(argv[3]));
    const char *schema = argv[4];
    GError *error = NULL;
    GDBusConnection *bus = g_bus_get_sync(G_BUS_TYPE_SESSION, NULL, &error);
    if (bus == NULL) {
        fprintf(stderr, "secret-service-probe: the session bus: %s\n", error->message);
        return 1;
    }
    GVariant *opened = call(bus, SERVICE, "OpenSession", g_variant_new("(sv)", "plain", g_variant_new_string("")), "(vo)");
    gchar *session = NULL;
    g_variant_get(opened, "(vo)", NULL, &session);
    g_variant_unref(opened);

    long long *raw = g_new(long long, count), *ping = g_new(long long, count);
    for (int i = 0; i < count; i++) {
        int n = (int)(random() % upto);
        char number[16], expected[64];
        snprintf(number, sizeof number, "%d", n);
        snprintf(expected, sizeof expected, "secret-%08d-xxxxxxxxxxxxxxxxxxxxxxx", n);

        long long started = now_ns();
        GVariantBuilder query;
        g_variant_builder_init(&query, G_VARIANT_TYPE("a{ss}"));
        g_variant_builder_add(&query, "{ss}", "app", "bench");
        g_variant_builder_add(&query, "{ss}", "n", number);
        g_variant_builder_add(&query, "{ss}", "xdg:schema", schema);
        GVariant *found = call(bus, SERVICE, "SearchItems", g_variant_new("(a{ss})", &query), "(aoao)");
        GVariant *unlocked = g_variant_get_child_value(found, 0);
        if (g_variant_n_children(unlocked) != 1) {
            fprintf(stderr, "secret-service-probe: item %d: %zu unlocked items found\n", n, g_variant_n_children(unlocked));
            return 1;
        }
        GVariant *secrets = call(bus, SERVICE, "GetSecrets", g_variant_new("(@aoo)", unlocked, session), "(a{o(oayays)})");
        raw[i] = now_ns() - started;

        GVariant *map = g_variant_get_child_value(secrets, 0);
        GVariant *entry = g_variant_n_children(map) == 1 ? g_variant_get_child_value(map, 0) : NULL;
        GVariant *secret = entry ? g_variant_get_child_value(entry, 1) : NULL;
        GVariant *value = secret ? g_variant_get_child_value(secret, 2) : NULL;
        gsize length = 0;
        const char *bytes = value ? g_variant_get_fixed_array(value, &length, 1) : NULL;
        if (bytes == NULL || length != strlen(expected) || memcmp(bytes, expected, length) != 0) {
            fprintf(stderr, "secret-service-probe: item %d: not its secret\n", n);
            return 1;
        }
        if (value) g_variant_unref(value);
        if (secret) g_variant_unref(secret);
        if (entry) g_variant_unref(entry);
        g_variant_unref(map);
        g_variant_unref(secrets);
        g_variant_unref(unlocked);
        g_variant_unref(found);

        started = now_ns();
        for (int k = 0; k < 2; k++) g_variant_unref(call(bus, "org.freedesktop.DBus.Peer", "Ping", NULL, NULL));
        ping[i] = now_ns() - started;
    }
    printf("{\"raw\": [");
    for (int i = 0; i < count; i++) printf("%s%lld", i ? ", " : "", raw[i]);
    printf("], \"ping\": [");
    for (int i = 0; i < count; i++) printf("%s%lld", i ? ", " : "", ping[i]);
    printf("]}\n");
    g_free(session);
    g_object_unref(bus);
    return 0;
}
