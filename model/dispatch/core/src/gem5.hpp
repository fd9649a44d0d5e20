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
#include <map>
#include <tuple>
#include <utility>
#include <vector>

#include "ownclock.hpp"

namespace core {

constexpr int BARRIER_SLOTS = 16;

template <class E, int W>
class Gem5 {
public:
    explicit Gem5(OwnClock<E, W>& own) : own(own), e(own.e), rows(e.cfg.aps) {}

    // -- Gem5Matcher --------------------------------------------------------------------------
    // free_slots: the free WF slots of each PEU in slot order (its count of multi-wave WGs
    // is barriers()).
    void free_slots(int ap, std::vector<std::vector<int>>& free) const {
        const int Q = e.cfg.peus, S = e.cfg.wave_slots;
        std::vector<char>& taken = taken_scratch;
        taken.assign(size_t(Q) * S, 0);
        for (const Record& r : own.records[ap])
            for (auto [q, s] : r.places) taken[size_t(q) * S + s] = 1;
        free.resize(Q);
        for (auto& slots : free) slots.clear();
        for (int q = 0; q < Q; ++q)
            for (int s = 0; s < S; ++s)
                if (!taken[size_t(q) * S + s]) free[q].push_back(s);
    }

    // free_slots' count: the AP's running multi-wave WGs.
    int barriers(int ap) const {
        int count = 0;
        for (const Record& r : own.records[ap]) count += r.waves > 1;
        return count;
    }

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
    bool slot_rows(const WorkGroup& wg, int ap, std::vector<int>& counts,
                   std::vector<std::pair<int, int>>& places) {
        auto& kept = rows[ap];
        if (kept.version != own.version[ap]) {
            kept.version = own.version[ap];
            kept.by_shape.clear();
        }
        const auto key = std::make_tuple(wg.waves, wg.vgpr, wg.sgpr);
        auto found = kept.by_shape.find(key);
        if (found == kept.by_shape.end()) {
            Rows made;
            made.fit = compute_rows(wg, ap, made.counts, made.places);
            found = kept.by_shape.emplace(key, std::move(made)).first;
        }
        counts = found->second.counts;
        places = found->second.places;
        return found->second.fit;
    }
    bool compute_rows(const WorkGroup& wg, int ap, std::vector<int>& counts,
                      std::vector<std::pair<int, int>>& places) const {
        const int Q = e.cfg.peus, w = wg.waves;
        std::vector<std::vector<int>>& free = free_scratch;
        free_slots(ap, free);
        std::vector<std::pair<int, int>>& candidates = candidate_scratch;    // (slot, PEU)
        candidates.clear();
        for (int q = 0; q < Q; ++q) {
            const int cap = own.units.capacity(wg, ap, q);
            for (int i = 0; i < cap && i < int(free[q].size()); ++i) candidates.push_back({free[q][i], q});
        }
        if (int(candidates.size()) < w) return false;
        std::sort(candidates.begin(), candidates.end());
        counts.assign(Q, 0);
        places.clear();
        for (int i = 0; i < w; ++i) {
            ++counts[candidates[i].second];
            places.push_back({candidates[i].second, candidates[i].first});
        }
        return true;
    }

    bool fits(const WorkGroup& wg, int ap, std::vector<int>& counts,
              std::vector<std::pair<int, int>>& places) {
        if (wg.waves > e.res.ap_slots[ap]) return false;
        if (wg.waves > 1 && barriers(ap) >= BARRIER_SLOTS) return false;
        return slot_rows(wg, ap, counts, places) && own.peu_fits(wg, ap, counts);
    }

    // -- Gem5Selector -------------------------------------------------------------------------
    // sweeps (A3): every AP from AP 0 for `kernel` until a sweep places nothing.
    int64_t sweeps(const Kernel& kernel, int64_t cycle) {
        int64_t placed_total = 0;
        std::vector<int> counts;
        std::vector<std::pair<int, int>> places;
        for (;;) {
            int64_t placed = 0;
            for (int ap = 0; ap < e.cfg.aps; ++ap) {
                if (!own.has_wgs(kernel)) return placed_total + placed;
                const int64_t index = e.channels[kernel.channel].front();
                const WorkGroup& wg = e.wgs[index];
                if (fits(wg, ap, counts, places)) {
                    const int64_t id = wg.id;
                    const int waves = wg.waves;
                    if (own.dispatch(index, ap, counts, cycle)) {
                        own.records[ap].push_back(Record{id, 0, waves, places});   // record()
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
    struct Rows {
        bool fit = false;
        std::vector<int> counts;
        std::vector<std::pair<int, int>> places;
    };
    struct Kept {
        int64_t version = -1;           // OwnClock::version of the AP when kept
        std::map<std::tuple<int, int, int>, Rows> by_shape;
    };
    std::vector<Kept> rows;             // per AP
    // Scratch space of free_slots and compute_rows (no allocation per call).
    mutable std::vector<char> taken_scratch;
    mutable std::vector<std::vector<int>> free_scratch;
    mutable std::vector<std::pair<int, int>> candidate_scratch;
};

}  // namespace core
