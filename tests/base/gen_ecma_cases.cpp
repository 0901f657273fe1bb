// Writes ecma_cases.tsv: what libstdc++'s std::regex (ECMAScript, the
// dialect llama.cpp's --tensor-type patterns are compiled in) says about
// each pattern and subject below. Not built by CMake: run by hand when the
// table changes, with the same libstdc++ llama.cpp was built with
//   g++ -O1 -o gen gen_ecma_cases.cpp && ./gen > ecma_cases.tsv
// Columns: pattern, subject, 1 (regex_search finds a match), 0 (it does
// not) or E (the pattern does not compile). No tabs in either.
#include <cstdio>
#include <regex>
#include <string>
#include <vector>

int main() {
    const std::vector<std::string> pats = {
        "attn_v", "attn_v\\.weight$", "^blk\\.\\d+\\.attn_v", "blk\\.(0|1)\\.attn_q", "blk\\.[0-3]\\.ffn_(up|gate)",
        "\\bffn_down\\b", "ffn_down\\B", "\\d{2}", "blk\\.\\d{1,2}\\.", "^(?!blk).*weight", "(?=.*exps)ffn",
        "a**", "x+?y", "[]", "[^]", "[]a]", "[^]a]", "a]", "a}", "\\cA", "\\x41", "\\u0062lk", "\\0", "[\\b]",
        "(a)\\1", "(b)(l)\\2", "\\1", "(a\\1)", "[z-a]", "[a-]", "[-a]", "[\\w-z]", "[a-\\d]", "a{", "a{2", "{2}",
        "a{1}{2}", "*a", "^*", "(?<=a)b", "(?i)a", "(", ")", "a|", "|a", "[[:alpha:]]+\\.", "[[:digit:]]",
        "[[:foo:]]", "[[.a.]]", "[[=b=]]", "\\D+", "\\W", "\\S\\s", ".", "\\.", "blk\\.\\d+\\.(attn|ffn)_(q|k|v|up)\\.weight",
        "^output\\.weight$", "token_embd", "_exps\\.weight$", "^$", "$^", "\\x7f", "[\\x30-\\x39]+", "\\\\", "x??",
        "(?:blk)\\.", "((blk))\\.\\2", "blk\\.1(?=0)", "blk\\.1(?!0)", "^(blk|output)", "attn_[^v]", "[.]",
        "t{0}o", "o{0,0}u", "l{2,}", "e{1,1000}", "\\b\\d", "k\\b", "\\Bk", "^\\b", "\\b$", "(?=\\b)blk",
    };
    const std::vector<std::string> subs = {
        "blk.0.attn_v.weight", "blk.1.attn_q.weight", "blk.10.ffn_down.weight", "blk.3.ffn_up_exps.weight",
        "output.weight", "token_embd.weight", "blk.12.ffn_gate.weight", "a]", "a}", "A", "aa", "xyb", "",
        "blk.11.attn_output.weight", "per_layer_token_embd.weight", "xxyy", "t.o.u", "blk.1.x",
    };
    for (const auto &p : pats) {
        bool ok = true;
        std::regex re;
        try {
            re = std::regex(p);
        } catch (const std::regex_error &) {
            ok = false;
        }
        if (!ok) {
            std::printf("%s\t-\tE\n", p.c_str());
            continue;
        }
        for (const auto &s : subs) {
            std::printf("%s\t%s\t%d\n", p.c_str(), s.empty() ? "(empty)" : s.c_str(), (int)std::regex_search(s, re));
        }
    }
}
