/* SPDX-License-Identifier: MIT */
/* anvil plugins [--json]: what is loaded, what failed and why, which kernel
 * each type uses, and the CPU features that decided it. */
#include <stdio.h>
#include <string.h>

#include "cli.h"

const char cli_help_plugins[] = "usage: anvil plugins [--json]\n"
                                "\n"
                                "Shows every plugin the config names (loaded, or failed with its reason), each\n"
                                "backend with its CPU score (0 = skipped, with why), its kernels and encoders,\n"
                                "the backend chosen for each weight type's dot and for its encoder, and the CPU\n"
                                "features (ANVIL_CPU_MASK hides some).\n"
                                "Exit status 1 when a plugin that is not optional failed to load.\n"
                                "\n"
                                "  --json  print the same as one JSON object on stdout\n";

static const char *kind_name(uint32_t k) {
    return k == ANVIL_PLUGIN_CODEC     ? "codec"
           : k == ANVIL_PLUGIN_BACKEND ? "backend"
           : k == ANVIL_PLUGIN_MIXED   ? "mixed"
                                       : "?";
}

static void print_text(const anvil_ctx *ctx) {
    const anvil_cpu_info *cpu = anvil_ctx_cpu(ctx);
    char feats[512], hidden[512];
    anvil_cpu_features_string(cpu->features, feats, sizeof feats);
    anvil_cpu_features_string(cpu->features_raw & ~cpu->features, hidden, sizeof hidden);
    printf("anvil %s, plugin ABI %d.%d\n", anvil_version(), ANVIL_ABI_MAJOR, ANVIL_ABI_MINOR);
    anvil_config_report cr;
    anvil_ctx_config_report(ctx, &cr);
    printf("config:   %s (%s)\n", cr.path, cr.source ? cr.source : "?");
    if (cr.insecure) {
        printf("WARNING:  INSECURE: %s:\n          files another user could change are loaded (development only)\n",
               cr.insecure_why);
    }
    if (cr.config_note) printf("WARNING:  INSECURE config: %s\n", cr.config_note);
    printf("cpu:      %s, %u online CPUs\n", anvil_cpu_arch_string(cpu->arch), cpu->n_cpus);
    printf("features: %s\n", feats[0] ? feats : "(none)");
    if (hidden[0]) printf("hidden:   %s (by ANVIL_CPU_MASK)\n", hidden);

    printf("\nplugins:\n");
    for (size_t i = 0; i < anvil_ctx_plugin_count(ctx); ++i) {
        anvil_plugin_report r;
        anvil_ctx_plugin_report(ctx, i, &r);
        if (r.status == ANVIL_OK && r.desc != NULL) {
            printf("  %-16s loaded   %-7s v%-8s %-8s %s\n", r.name, kind_name(r.desc->kind),
                   r.desc->version ? r.desc->version : "?", r.desc->license ? r.desc->license : "?", r.path);
            if (r.desc->n_codecs > 0) {
                printf("  %-16s codecs: ", "");
                for (size_t c = 0; c < r.desc->n_codecs; ++c) {
                    const anvil_codec *cd = r.desc->codecs[c];
                    const anvil_codec *reg = anvil_ctx_codec(ctx, cd->type_id);
                    printf("%s%s", c ? " " : "", reg ? reg->name : "?");
                }
                printf("\n");
            }
            if (r.trust_note) printf("  %-16s WARNING: INSECURE: %s\n", "", r.trust_note);
        } else {
            printf("  %-16s %s  %s\n", r.name,
                   r.optional && r.status == ANVIL_E_PLUGIN_NOT_FOUND ? "absent " : "FAILED ",
                   r.reason ? r.reason : "");
            if (r.path) printf("  %-16s file: %s\n", "", r.path);
            if (r.config_line > 0) printf("  %-16s named at: %s:%d\n", "", cr.path, r.config_line);
            if (!(r.optional && r.status == ANVIL_E_PLUGIN_NOT_FOUND)) {
                printf("  %-16s status: %s\n", "", anvil_strerror(r.status));
            }
        }
    }

    printf("\nbackends:\n");
    for (size_t i = 0; i < anvil_ctx_backend_count(ctx); ++i) {
        anvil_backend_report b;
        anvil_ctx_backend_report(ctx, i, &b);
        if (b.score > 0) {
            printf("  %-10s (%s) score %u, usable: %s\n", b.name, b.plugin, b.score, b.why && b.why[0] ? b.why : "");
        } else {
            printf("  %-10s (%s) SKIPPED, cannot run on this CPU: %s\n", b.name, b.plugin,
                   b.why && b.why[0] ? b.why : "no reason given");
        }
        printf("  %-10s quantizers:", "");
        for (size_t q = 0; q < b.n_quantizers; ++q) printf(" %s", anvil_type_name(ctx, b.quantizers[q].act_type));
        printf("\n  %-10s kernels:", "");
        for (size_t k = 0; k < b.n_kernels; ++k) {
            printf(" %s.%s", anvil_type_name(ctx, b.kernels[k].weight_type),
                   anvil_type_name(ctx, b.kernels[k].act_type));
            if (b.kernels[k].pack) printf("+packed");
        }
        printf("\n");
        const anvil_weight_encoder *enc = NULL;
        size_t n_enc = 0;
        anvil_ctx_backend_encoders(ctx, i, &enc, &n_enc);
        if (n_enc > 0) {
            printf("  %-10s encoders:", "");
            for (size_t e = 0; e < n_enc; ++e) {
                printf(" %s%s", anvil_type_name(ctx, enc[e].type_id),
                       enc[e].flags & ANVIL_ENCODER_WEIGHTED ? "+weighted" : "");
            }
            printf("\n");
        }
    }

    printf("\ndispatch (per weight type):\n");
    printf("  %-9s %-6s %-10s %-14s %-10s %s\n", "type", "act", "backend", "variant", "quantizer", "why");
    for (size_t i = 0; i < anvil_ctx_dispatch_count(ctx); ++i) {
        anvil_dispatch_report d;
        anvil_ctx_dispatch_report(ctx, i, &d);
        printf("  %-9s %-6s %-10s %-14s %-10s %s\n", anvil_type_name(ctx, d.weight_type),
               anvil_type_name(ctx, d.act_type), d.backend ? d.backend : "-",
               d.variant ? d.variant : (d.fallback ? "fallback" : "-"),
               d.quantizer_backend ? d.quantizer_backend : "-", d.note ? d.note : "");
    }

    printf("\nencoders (per type; codec = the codec's own reference encoder):\n");
    printf("  %-9s %-10s %-14s %-10s %s\n", "type", "backend", "variant", "weighted", "why");
    for (size_t i = 0; i < anvil_ctx_dispatch_count(ctx); ++i) {
        anvil_encoder_report e;
        anvil_ctx_encoder_report(ctx, i, &e);
        const anvil_codec *c = anvil_ctx_codec(ctx, e.type_id);
        if (c == NULL || (c->encode == NULL && c->encode_rows == NULL)) continue;
        const int plain = c->encode != NULL && !(c->flags & ANVIL_CODEC_NEEDS_IMATRIX);
        printf("  %-9s %-10s %-14s %-10s %s\n", anvil_type_name(ctx, e.type_id),
               e.backend ? e.backend : (plain ? "codec" : "-"), e.variant ? e.variant : "-",
               e.weighted_backend ? e.weighted_backend : (c->encode_rows ? "codec" : "-"), e.note ? e.note : "");
    }
}

static void json_kv(const char *k, const char *v, int comma) {
    printf("\"%s\":", k);
    cli_json_string(stdout, v);
    if (comma) printf(",");
}

static void print_json(const anvil_ctx *ctx) {
    const anvil_cpu_info *cpu = anvil_ctx_cpu(ctx);
    char feats[512], raw[512];
    anvil_cpu_features_string(cpu->features, feats, sizeof feats);
    anvil_cpu_features_string(cpu->features_raw, raw, sizeof raw);
    cli_json_begin(stdout, "plugins");
    printf(",");
    json_kv("version", anvil_version(), 1);
    printf("\"abi\":\"%d.%d\",", ANVIL_ABI_MAJOR, ANVIL_ABI_MINOR);
    anvil_config_report cr;
    anvil_ctx_config_report(ctx, &cr);
    json_kv("config", cr.path, 1);
    json_kv("config_source", cr.source, 1);
    printf("\"insecure\":%s,", cr.insecure ? "true" : "false");
    json_kv("insecure_why", cr.insecure_why ? cr.insecure_why : "", 1);
    printf("\"cpu\":{");
    json_kv("arch", anvil_cpu_arch_string(cpu->arch), 1);
    printf("\"n_cpus\":%u,", cpu->n_cpus);
    json_kv("features", feats, 1);
    json_kv("features_unmasked", raw, 0);
    printf("},\"plugins\":[");
    for (size_t i = 0; i < anvil_ctx_plugin_count(ctx); ++i) {
        anvil_plugin_report r;
        anvil_ctx_plugin_report(ctx, i, &r);
        printf("%s{", i ? "," : "");
        json_kv("name", r.name, 1);
        json_kv("path", r.path, 1);
        printf("\"loaded\":%s,\"optional\":%s,", r.status == ANVIL_OK ? "true" : "false",
               r.optional ? "true" : "false");
        json_kv("status", cli_status_name(r.status), 1);
        printf("\"config_line\":%d,", r.config_line);
        json_kv("trust_note", r.trust_note ? r.trust_note : "", 1);
        json_kv("reason", r.reason ? r.reason : "", 0);
        if (r.desc) {
            printf(",");
            json_kv("id", r.desc->id, 1);
            json_kv("version", r.desc->version, 1);
            json_kv("license", r.desc->license, 1);
            json_kv("kind", kind_name(r.desc->kind), 1);
            printf("\"codecs\":[");
            for (size_t c = 0; c < r.desc->n_codecs; ++c) {
                const anvil_codec *reg = anvil_ctx_codec(ctx, r.desc->codecs[c]->type_id);
                printf("%s", c ? "," : "");
                cli_json_string(stdout, reg ? reg->name : "?");
            }
            printf("]");
        }
        printf("}");
    }
    printf("],\"backends\":[");
    for (size_t i = 0; i < anvil_ctx_backend_count(ctx); ++i) {
        anvil_backend_report b;
        anvil_ctx_backend_report(ctx, i, &b);
        printf("%s{", i ? "," : "");
        json_kv("name", b.name, 1);
        json_kv("plugin", b.plugin, 1);
        printf("\"score\":%u,\"usable\":%s,", b.score, b.score ? "true" : "false");
        json_kv("why", b.why, 1);
        printf("\"kernels\":[");
        for (size_t k = 0; k < b.n_kernels; ++k) {
            printf("%s{", k ? "," : "");
            json_kv("weight", anvil_type_name(ctx, b.kernels[k].weight_type), 1);
            json_kv("act", anvil_type_name(ctx, b.kernels[k].act_type), 1);
            json_kv("variant", b.kernels[k].variant, 1);
            printf("\"gemv\":%s,\"gemm\":%s,\"packed\":%s}", b.kernels[k].gemv ? "true" : "false",
                   b.kernels[k].gemm ? "true" : "false", b.kernels[k].pack ? "true" : "false");
        }
        printf("],\"quantizers\":[");
        for (size_t q = 0; q < b.n_quantizers; ++q) {
            printf("%s", q ? "," : "");
            cli_json_string(stdout, anvil_type_name(ctx, b.quantizers[q].act_type));
        }
        const anvil_weight_encoder *enc = NULL;
        size_t n_enc = 0;
        anvil_ctx_backend_encoders(ctx, i, &enc, &n_enc);
        printf("],\"encoders\":[");
        for (size_t e = 0; e < n_enc; ++e) {
            printf("%s{", e ? "," : "");
            json_kv("type", anvil_type_name(ctx, enc[e].type_id), 1);
            json_kv("variant", enc[e].variant, 1);
            printf("\"weighted\":%s}", enc[e].flags & ANVIL_ENCODER_WEIGHTED ? "true" : "false");
        }
        printf("]}");
    }
    printf("],\"dispatch\":[");
    for (size_t i = 0; i < anvil_ctx_dispatch_count(ctx); ++i) {
        anvil_dispatch_report d;
        anvil_ctx_dispatch_report(ctx, i, &d);
        printf("%s{", i ? "," : "");
        json_kv("type", anvil_type_name(ctx, d.weight_type), 1);
        json_kv("act", anvil_type_name(ctx, d.act_type), 1);
        json_kv("backend", d.backend ? d.backend : "", 1);
        json_kv("variant", d.variant ? d.variant : "", 1);
        json_kv("quantizer", d.quantizer_backend ? d.quantizer_backend : "", 1);
        printf("\"fallback\":%s,", d.fallback ? "true" : "false");
        json_kv("note", d.note, 0);
        anvil_encoder_report e;
        anvil_ctx_encoder_report(ctx, i, &e);
        printf(",\"encoder\":{");
        json_kv("backend", e.backend ? e.backend : "", 1);
        json_kv("variant", e.variant ? e.variant : "", 1);
        json_kv("weighted_backend", e.weighted_backend ? e.weighted_backend : "", 1);
        json_kv("note", e.note ? e.note : "", 0);
        printf("}}");
    }
    printf("]}\n");
}

int cmd_plugins(cli_globals *g, int argc, char **argv) {
    int json = 0;
    for (int i = 1; i < argc; ++i) {
        if (strcmp(argv[i], "--json") == 0) {
            json = 1;
        } else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            return cli_help("plugins");
        } else {
            return cli_usage_error("plugins", "unknown argument '%s'", argv[i]);
        }
    }
    anvil_error err;
    anvil_ctx *ctx = NULL;
    if (anvil_ctx_open_ex(&ctx, g->config_path, ANVIL_CTX_KEEP_GOING, &err) != ANVIL_OK) {
        return cli_fail_err("plugins", &err);
    }
    g->ctx = ctx;
    if (json) print_json(ctx);
    else print_text(ctx);
    int failed = 0;
    for (size_t i = 0; i < anvil_ctx_plugin_count(ctx); ++i) {
        anvil_plugin_report r;
        anvil_ctx_plugin_report(ctx, i, &r);
        if (r.status != ANVIL_OK && !r.optional) failed = 1;
    }
    return failed;
}
