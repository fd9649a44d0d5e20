// Status words and the free-block functions of model/maxblock.py, bit for bit.
//
// A status word of n <= 64 W blocks (bit i = block i, 1 = free) is a Bits<W>: W 64-bit
// words, least significant first. Every function here is the compiled twin of one of
// model.maxblock's unchecked fast paths (longest_run_unchecked, first_fit_unchecked,
// grouped_run_unchecked) or of the sampled circuit's rounding (model.dispatch.views), and
// tests/test_core_bits.py holds each equal to it: exhaustively to 12 blocks, randomly to
// 4,096.
#pragma once

#include <array>
#include <bit>
#include <cstdint>
#include <string>
#include <vector>

namespace core {

template <int W>
struct Bits {
    std::array<uint64_t, W> w{};

    bool any() const {
        for (int i = 0; i < W; ++i)
            if (w[i]) return true;
        return false;
    }
    bool operator==(const Bits&) const = default;

    Bits& operator&=(const Bits& o) {
        for (int i = 0; i < W; ++i) w[i] &= o.w[i];
        return *this;
    }
    Bits& operator|=(const Bits& o) {
        for (int i = 0; i < W; ++i) w[i] |= o.w[i];
        return *this;
    }
    Bits operator&(const Bits& o) const { Bits r = *this; return r &= o; }
    Bits operator|(const Bits& o) const { Bits r = *this; return r |= o; }
    Bits operator~() const {
        Bits r;
        for (int i = 0; i < W; ++i) r.w[i] = ~w[i];
        return r;
    }

    // this >> k (logical; k >= 0).
    Bits shr(int k) const {
        Bits r;
        const int words = k >> 6, bits = k & 63;
        for (int i = 0; i < W; ++i) {
            const int j = i + words;
            if (j >= W) break;
            uint64_t v = w[j] >> bits;
            if (bits && j + 1 < W) v |= w[j + 1] << (64 - bits);
            r.w[i] = v;
        }
        return r;
    }

    // The index of the lowest set bit (-1 when none).
    int lowest() const {
        for (int i = 0; i < W; ++i)
            if (w[i]) return i * 64 + std::countr_zero(w[i]);
        return -1;
    }

    int count() const {
        int c = 0;
        for (int i = 0; i < W; ++i) c += std::popcount(w[i]);
        return c;
    }

    bool test(int i) const { return (w[i >> 6] >> (i & 63)) & 1; }
    void set(int i) { w[i >> 6] |= uint64_t{1} << (i & 63); }

    // Blocks start .. start + length - 1 (length >= 0, start + length <= 64 W).
    static Bits range(int start, int length) {
        Bits r;
        for (int i = 0; i < W; ++i) {
            const int lo = i * 64, hi = lo + 64;
            const int a = start > lo ? start : lo;
            const int b = start + length < hi ? start + length : hi;
            if (a >= b) continue;
            const int n = b - a;
            const uint64_t ones = n == 64 ? ~uint64_t{0} : ((uint64_t{1} << n) - 1);
            r.w[i] = ones << (a - lo);
        }
        return r;
    }

    // The word of a bit mask given as 64-bit words, least significant first.
    static Bits of_words(const std::vector<uint64_t>& words) {
        Bits r;
        for (int i = 0; i < W && i < int(words.size()); ++i) r.w[i] = words[i];
        return r;
    }
    std::vector<uint64_t> words() const { return std::vector<uint64_t>(w.begin(), w.end()); }

    // Python's f"{mask:#x}".
    std::string hex() const {
        static const char digits[] = "0123456789abcdef";
        std::string out;
        bool started = false;
        for (int i = W - 1; i >= 0; --i)
            for (int s = 60; s >= 0; s -= 4) {
                const int d = int((w[i] >> s) & 15);
                if (d || started) {
                    out += digits[d];
                    started = true;
                }
            }
        return "0x" + (started ? out : std::string("0"));
    }

    // The all-free word of n blocks.
    static Bits ones(int n) { return range(0, n); }

    // Every block of `mask` is set here.
    bool covers(const Bits& mask) const {
        for (int i = 0; i < W; ++i)
            if ((w[i] & mask.w[i]) != mask.w[i]) return false;
        return true;
    }
};

// model.maxblock.longest_run_unchecked: the longest run of 1 bits (O(log n) word steps).
template <int W>
int longest_run(const Bits<W>& free) {
    if (!free.any()) return 0;
    Bits<W> starts = free;
    int length = 1;
    for (;;) {
        Bits<W> longer = starts & starts.shr(length);
        if (!longer.any()) break;
        starts = longer;
        length <<= 1;
    }
    for (int step = length >> 1; step; step >>= 1) {
        Bits<W> longer = starts & starts.shr(step);
        if (longer.any()) {
            starts = longer;
            length += step;
        }
    }
    return length;
}

// model.maxblock.first_fit_unchecked: the lowest start of a run of `request` >= 1 free
// blocks, -1 when there is none.
template <int W>
int first_fit(const Bits<W>& free, int request) {
    Bits<W> starts = free;
    int covered = 1;
    while (covered < request && starts.any()) {
        const int step = covered <= request - covered ? covered : request - covered;
        starts &= starts.shr(step);
        covered += step;
    }
    return starts.lowest();
}

// model.maxblock.grouped_run_unchecked: the longest run of wholly free groups of n / groups
// blocks, times the group size.
template <int W>
int grouped_run(const Bits<W>& free, int n, int groups) {
    const int size = n / groups;
    Bits<W> grouped;
    for (int g = 0; g < groups; ++g)
        if (free.covers(Bits<W>::range(g * size, size))) grouped.set(g);
    return longest_run(grouped) * size;
}

// The sampled circuit (model.dispatch.views.circuit_function): the largest sampled length
// (`lengths`, ascending) that the exact length reaches, 0 when none.
inline int sampled_length(int exact, const std::vector<int>& lengths) {
    int best = 0;
    for (int length : lengths) {
        if (length > exact) break;
        best = length;
    }
    return best;
}

}  // namespace core
