// AMD's GPU model in gem5, its workgroup dispatch: the compiled twin of
// model/dispatch/gem5.py (Gem5Matcher, Gem5Selector), rule by rule (A1-A8 in its
// docstring). Gem5Matcher's slot rows are kept per AP and WG shape until what they read
// changes, as there: the AP's slots and registers (a take or a release: OwnClock::version)
// and, on blocks units, the AP's view (shown(): Gem5Matcher.mark). Its free slots are not
// kept: computed here.
#pragma once

#include <algorithm>
#include <cstdint>
#include <deque>
#include <tuple>
#include <utility>
#include <vector>

#include "ownclock.hpp"

namespace core {

constexpr int BARRIER_SLOTS = 16;

template <class E, int W>
class Gem5 {
    // A WG shape's slot rows on one AP (slot_rows), and an AP's kept ones.
    struct Rows {
        bool fit = false;
        std::vector<int> counts;
        std::vector<std::pair<int, int>> places;
    };
    using Shape = std::tuple<int, int, int>;    // (waves, VGPR, SGPR blocks per wave)
    struct Kept {
        int64_t version = -1;           // OwnClock::version of the AP when kept
        std::vector<std::pair<Shape, Rows>> by_shape;
    };

public:
    explicit Gem5(OwnClock<E, W>& own) : own(own), e(own.e), rows(e.cfg.aps) {}

    // -- Gem5Matcher --------------------------------------------------------------------------
    // free_slots' count: the AP's running multi-wave WGs.
    int barriers(int ap) const { return own.multi_wave[ap]; }

    // Gem5Matcher.mark: the views of the APs `changed` changed (View::show); on blocks units
    // a PEU's capacity reads the view, so their kept rows go.
    void shown(const std::vector<int>& changed) {
        if (own.units.kind != BLOCKS) return;
        for (const int ap : changed) rows[ap].by_shape.clear();
    }

    // slot_rows (A5): the free slots visited row by row, each PEU taking waves while its
    // registers hold them; the w first such slots in row order. false: fewer than w.
    // Gem5Matcher.slot_rows: kept per AP and WG shape until the AP (or, on blocks, its
    // view) changes.
    const Rows& slot_rows(const WorkGroup& wg, int ap) {
        auto& kept = rows[ap];
        if (kept.version != own.version[ap]) {
            kept.version = own.version[ap];
            kept.by_shape.clear();
        }
        const Shape key{wg.waves, wg.vgpr, wg.sgpr};
        for (const auto& [shape, made] : kept.by_shape)     // a few shapes per AP
            if (shape == key) return made;
        Rows made;
        made.fit = compute_rows(wg, ap, made.counts, made.places);
        kept.by_shape.emplace_back(key, std::move(made));
        return kept.by_shape.back().second;
    }
    // Gem5Matcher._slot_rows: each PEU's candidates are its first free slots, as many as its
    // registers hold (Units::capacity), and the w first candidates in (slot, PEU) order are
    // taken; scanned here in that order, slot by slot, without sorting them.
    bool compute_rows(const WorkGroup& wg, int ap, std::vector<int>& counts,
                      std::vector<std::pair<int, int>>& places) const {
        const int Q = e.cfg.peus, S = e.cfg.wave_slots, w = wg.waves;
        const std::vector<char>& taken = own.slots_taken[ap];   // free_slots
        std::vector<int>& cap = cap_scratch;
        cap.resize(Q);
        for (int q = 0; q < Q; ++q) cap[q] = own.units.capacity(wg, ap, q);
        counts.assign(Q, 0);
        places.clear();
        int left = w;
        for (int s = 0; s < S && left; ++s)
            for (int q = 0; q < Q && left; ++q)
                if (!taken[size_t(q) * S + s] && counts[q] < cap[q]) {
                    ++counts[q];
                    places.push_back({q, s});
                    --left;
                }
        return !left;
    }

    // The kept rows of wg on ap when it fits there (nullptr: it does not).
    const Rows* fits(const WorkGroup& wg, int ap) {
        if (wg.waves > e.res.ap_slots[ap]) return nullptr;
        if (wg.waves > 1 && barriers(ap) >= BARRIER_SLOTS) return nullptr;
        const Rows& made = slot_rows(wg, ap);
        return made.fit && own.peu_fits(wg, ap, made.counts) ? &made : nullptr;
    }

    // -- Gem5Selector -------------------------------------------------------------------------
    // sweeps (A3): every AP from AP 0 for `kernel` until a sweep places nothing.
    int64_t sweeps(const Kernel& kernel, int64_t cycle) {
        int64_t placed_total = 0;
        for (;;) {
            int64_t placed = 0;
            for (int ap = 0; ap < e.cfg.aps; ++ap) {
                if (!own.has_wgs(kernel)) return placed_total + placed;
                const int64_t index = e.channels[kernel.channel].front();
                const WorkGroup& wg = e.wgs[index];
                if (const Rows* made = fits(wg, ap)) {
                    const int64_t id = wg.id;
                    const int waves = wg.waves;
                    // Copied: the dispatch changes the AP, which drops its kept rows.
                    const std::vector<int> counts = made->counts;
                    std::vector<std::pair<int, int>> places = made->places;
                    if (own.dispatch(index, ap, counts, cycle)) {
                        own.hold(ap, Record{id, 0, waves, std::move(places)});   // record()
                        ++placed;
                    }
                }
            }
            placed_total += placed;
            if (!placed) return placed_total;
        }
    }

    void step(int64_t cycle, bool& dispatched, bool& awake, bool& matched, bool& waiting) {
        waiting = e.any_heads();
        for (int channel = 0; channel < e.opt.channel_count; ++channel) {   // launches
            const Kernel k = own.kernel(channel);
            if (own.has_wgs(k) && std::find(fifo.begin(), fifo.end(), k) == fifo.end()) fifo.push_back(k);
        }
        for (auto it = fifo.begin(); it != fifo.end();)
            it = own.has_wgs(*it) ? it + 1 : fifo.erase(it);
        size_t fails = 0;
        int64_t count = 0;
        while (fifo.size() > fails) {                       // A1
            const Kernel k = fifo.front();
            count += sweeps(k, cycle);
            if (own.has_wgs(k)) {                           // failed: to the back
                fifo.pop_front();
                fifo.push_back(k);
                ++fails;
            } else {
                fifo.pop_front();
            }
        }
        dispatched = matched = count > 0;
        awake = false;
    }

private:
    OwnClock<E, W>& own;
    E& e;
    std::deque<Kernel> fifo;            // the kernels waiting, front first
    std::vector<Kept> rows;             // per AP
    // Scratch space of compute_rows (no allocation per call).
    mutable std::vector<int> cap_scratch;
};

}  // namespace core
