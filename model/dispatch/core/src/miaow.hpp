// MIAOW's workgroup dispatcher: the compiled twin of model/dispatch/miaow.py (MiaowMatcher,
// MiaowSelector, MiaowOneClockSelector), rule by rule (M1-M14 in its docstring): the
// 64-entry in-flight buffer, the intake, the round robin over entries, the group locks, the
// clocks per decision, and the replay of quiet decisions (wake / replay). The matcher's kept
// fit masks (Matcher.mask, share_mask, hand_on) change no result: here every mask is
// computed when asked.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "ownclock.hpp"

namespace core {

constexpr int BUFFER_ENTRIES = 64, INTAKE_CLOCKS = 5, TABLE_GROUPS = 2;

// decision_clocks (M11, M12) and lock_clocks (M5).
inline int64_t decision_clocks(int entry, int waves) { return 16 + 2 * entry + std::max(0, waves - 5); }
inline int64_t lock_clocks(int64_t resident) { return 18 + 4 * resident; }

template <class E, int W>
class Miaow {
public:
    Miaow(OwnClock<E, W>& own, bool one_clock)
        : own(own), e(own.e), one_clock(one_clock), entries(BUFFER_ENTRIES, -1),
          buffered(e.opt.channel_count, 0), groups(std::min(TABLE_GROUPS, e.cfg.aps)),
          lock_until(groups, 0), intake_clocks(one_clock ? 1 : INTAKE_CLOCKS) {
        per_ap = own.units.kind == AP_RANGE;
    }

    // -- MiaowMatcher -------------------------------------------------------------------------
    // placement: the unrotated split, or with ap_range each wave in turn to the PEU with the
    // most free slots (ties to the lowest). false: none.
    bool placement(const WorkGroup& wg, int ap, std::vector<int>& counts) const {
        if (!per_ap) {
            counts = e.matcher.row_for(wg.waves, 0);
            return true;
        }
        if (wg.waves > e.res.ap_slots[ap]) return false;
        const int Q = e.cfg.peus;
        std::vector<int> free(Q);
        for (int q = 0; q < Q; ++q) free[q] = e.res.slot(ap, q);
        counts.assign(Q, 0);
        for (int k = 0; k < wg.waves; ++k) {
            const int q = int(std::max_element(free.begin(), free.end()) - free.begin());
            ++counts[q];
            --free[q];
        }
        return true;
    }
    bool fits(const WorkGroup& wg, int ap) const {
        if (own.units.kind == BLOCKS) return e.matcher.fits(wg, ap);     // Matcher.fits
        if (wg.waves > e.res.ap_slots[ap]) return false;
        if (per_ap) return own.units.fits(wg, ap, {});                  // only the ranges
        return own.peu_fits(wg, ap, e.matcher.row_for(wg.waves, 0));
    }
    // Matcher.mask: the APs wg fits (bit a for AP a).
    ApMask mask(const WorkGroup& wg) const {
        ApMask m(e.cfg.aps);
        for (int ap = 0; ap < e.cfg.aps; ++ap)
            if (fits(wg, ap)) m.set(ap);
        return m;
    }

    // -- MiaowSelector ------------------------------------------------------------------------
    int group(int ap) const { return int(int64_t(ap) * groups / e.cfg.aps); }

    // takeable: the channel has a WG not yet buffered that the intake may take.
    bool takeable(int channel) const {
        const auto& queue = e.channels[channel];
        const int index = buffered[channel];
        if (index >= int(queue.size())) return false;
        if (e.wgs[queue[index]].barrier && (index || e.inflight[channel])) return false;
        return !(index && e.wgs[queue.front()].barrier);
    }
    int free_entry() const {
        for (int k = 0; k < BUFFER_ENTRIES; ++k)
            if (entries[k] < 0) return k;
        return -1;
    }

    // intake (M1, M2): one WG from the next channel in turn into the lowest free entry.
    void intake(int64_t cycle) {
        if (cycle < next_intake || free_entry() < 0) return;
        const int count = e.opt.channel_count;
        for (int k = 0; k < count; ++k) {
            const int channel = (intake_pointer + k) % count;
            if (!takeable(channel)) continue;
            entries[free_entry()] = e.channels[channel][buffered[channel]];
            ++buffered[channel];
            intake_pointer = (channel + 1) % count;
            next_intake = cycle + intake_clocks;
            return;
        }
    }

    // releases (M5, M14): each WG released since the last cycle locks its AP's group
    // (MiaowOneClockSelector: no locks).
    void releases(int64_t cycle) {
        for (int ap : own.dirty) {
            for (int k = 0; k < own.released_on[ap] && !one_clock; ++k) {
                const int g = group(ap);
                lock_until[g] = std::max(lock_until[g], cycle) + lock_clocks(int64_t(own.records[ap].size()));
            }
            own.released_on[ap] = 0;
        }
        own.dirty.clear();
    }

    // wake: the next cycle this dispatcher acts without an outside event (-1: none); sets
    // quiet_from when every decision from the next one on is a rejection.
    int64_t wake(int64_t cycle) {
        if (!e.any_heads()) return -1;
        int64_t due = -1;
        auto add = [&](int64_t at) { due = due < 0 ? at : std::min(due, at); };
        bool occupied = false;
        for (auto x : entries) occupied = occupied || x >= 0;
        if (occupied) {
            const int64_t start = std::max(cycle + 1, busy_until);
            if (all_rejected(start)) {
                quiet_from = cycle + 1;
                for (auto until : lock_until)
                    if (until > start) add(until);
            } else {
                add(start);
            }
        }
        bool any_takeable = false;
        for (int c = 0; c < e.opt.channel_count; ++c) any_takeable = any_takeable || takeable(c);
        if (free_entry() >= 0 && any_takeable) add(std::max(next_intake, cycle + 1));
        return due;
    }

    // locked: the APs whose group is locked in `cycle`.
    ApMask locked(int64_t cycle) const {
        ApMask m(e.cfg.aps);
        for (int ap = 0; ap < e.cfg.aps; ++ap)
            if (lock_until[group(ap)] > cycle) m.set(ap);
        return m;
    }
    static bool overlap(const ApMask& a, const ApMask& b) {
        for (size_t i = 0; i < a.w.size(); ++i)
            if (a.w[i] & ~b.w[i]) return true;
        return false;
    }
    // all_rejected: every buffered WG fits no AP unlocked in `cycle`.
    bool all_rejected(int64_t cycle) const {
        const ApMask held = locked(cycle);
        for (auto index : entries)
            if (index >= 0 && overlap(mask(e.wgs[index]), held)) return false;
        return true;
    }

    // replay: the decisions from quiet_from to cycle - 1, every one a rejection: whole
    // rounds of the buffer at once, then the rest one by one.
    void replay(int64_t cycle) {
        int64_t start = std::max(quiet_from, busy_until);
        quiet_from = -1;
        if (start >= cycle) return;
        std::vector<int> order;
        std::vector<int64_t> lengths;
        int64_t period = 0;
        for (int k = 0; k < BUFFER_ENTRIES; ++k) {
            const int entry = (last + 1 + k) % BUFFER_ENTRIES;
            if (entries[entry] < 0) continue;
            order.push_back(entry);
            lengths.push_back(clocks(entry, e.wgs[entries[entry]].waves));
            period += lengths.back();
        }
        const int64_t rounds = (cycle - start) / period;
        start += rounds * period;
        int64_t done = rounds * int64_t(order.size());
        if (rounds) last = order.back();
        for (size_t i = 0; i < order.size(); ++i) {
            if (start >= cycle) break;
            last = order[i];
            start += lengths[i];
            ++done;
        }
        busy_until = start;
        decisions += done;
        rejections += done;
    }

    int64_t clocks(int entry, int waves) const { return one_clock ? 1 : decision_clocks(entry, waves); }

    void step(int64_t cycle, bool& dispatched, bool& awake, bool& matched, bool& waiting) {
        if (quiet_from >= 0) replay(cycle);
        releases(cycle);
        intake(cycle);
        waiting = e.any_heads();
        dispatched = awake = matched = false;
        if (cycle < busy_until) return;
        int entry = -1;
        for (int k = 0; k < BUFFER_ENTRIES && entry < 0; ++k)
            if (entries[(last + 1 + k) % BUFFER_ENTRIES] >= 0) entry = (last + 1 + k) % BUFFER_ENTRIES;
        if (entry < 0) return;
        last = entry;
        const int64_t index = entries[entry];
        const WorkGroup& wg = e.wgs[index];
        ++decisions;
        busy_until = cycle + clocks(entry, wg.waves);
        ApMask m = mask(wg);
        const ApMask held = locked(cycle);
        for (size_t i = 0; i < m.w.size(); ++i) m.w[i] &= ~held.w[i];
        const int ap = m.lowest();
        std::vector<int> waves;
        if (ap >= 0 && placement(wg, ap, waves)) {
            const int64_t resident = int64_t(own.records[ap].size());
            const int64_t id = wg.id;
            const int channel = wg.channel;
            if (own.dispatch(index, ap, waves, cycle, true)) {
                entries[entry] = -1;
                --buffered[channel];
                own.records[ap].push_back(Record{id});
                if (!one_clock) {                            // lock (M5)
                    const int g = group(ap);
                    lock_until[g] = std::max(lock_until[g], cycle) + lock_clocks(resident);
                }
                dispatched = matched = true;
                return;
            }
        }
        ++rejections;
    }

    // Metrics._buffer: the decisions started before `cycles` (quiet ones replayed first).
    void finish(int64_t cycles) {
        if (quiet_from >= 0) replay(cycles);
    }

    int64_t decisions = 0, rejections = 0;

private:
    OwnClock<E, W>& own;
    E& e;
    bool one_clock, per_ap = false;
    std::vector<int64_t> entries;       // 64, a WG index or -1
    std::vector<int> buffered;          // per channel, its first WGs in the buffer
    int last = BUFFER_ENTRIES - 1;      // the entry tried last
    int64_t busy_until = 0, next_intake = 0;
    int intake_pointer = 0, groups;
    std::vector<int64_t> lock_until;
    int64_t quiet_from = -1;            // -1: None
    int64_t intake_clocks;
};

}  // namespace core
