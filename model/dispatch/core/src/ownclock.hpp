// What the faithful baselines share: the compiled twin of model/dispatch/ownclock.py
// (ApRecords, RecordingMatcher, OwnClockSelector, largest_range_plan). E is the engine
// (Engine<W> of engine.hpp): its channels, WG table, resources and commit.
//
// ApRecords prunes a released WG's record when its AP is next read; here the record goes at
// the release (what any read sees is the same), and the releases per AP since MIAOW last
// counted them are kept for its group locks (model.dispatch.miaow.MiaowSelector.releases).
#pragma once

#include <cstdint>
#include <set>
#include <utility>
#include <vector>

#include "units.hpp"

namespace core {

// selection: the engine's numbering (model/dispatch/core/engine.py SELECTIONS).
enum Selection : int { MULTI = 0, STRICT, RR_FIRST_FIT, BLOCKING_BUFFER, MIAOW, GPGPUSIM,
                       GPGPUSIM_CONCURRENT, GEM5, MIAOW_ONE_CLOCK };

// A kernel as the sources see it: (channel, epoch); channel -1: None.
struct Kernel {
    int channel = -1;
    int64_t epoch = 0;
    bool none() const { return channel < 0; }
    bool operator==(const Kernel&) const = default;
};

// One running WG's record in a baseline's own bookkeeping: its id, GPGPU-Sim's WG slot,
// gem5's waves and WF slots (PEU, slot).
struct Record {
    int64_t id;
    int slot = 0, waves = 0;
    std::vector<std::pair<int, int>> places;
};

template <class E, int W>
class OwnClock {
public:
    explicit OwnClock(E& engine)
        : e(engine), units(unit_kind(engine.rules.units), engine.cfg, engine.view, engine.res),
          epoch(engine.opt.channel_count, 0), records(engine.cfg.aps), released_on(engine.cfg.aps, 0),
          version(engine.cfg.aps, 0),
          slots_taken(engine.cfg.aps, std::vector<char>(size_t(engine.cfg.peus) * engine.cfg.wave_slots, 0)),
          multi_wave(engine.cfg.aps, 0) {}

    static int unit_kind(int units) { return units; }

    // -- kernels (OwnClockSelector) -----------------------------------------------------------
    // launchable: the channel's head may start (an in-order barrier waits for its channel).
    bool launchable(int channel) const {
        const auto& queue = e.channels[channel];
        return !queue.empty() && !(e.wgs[queue.front()].barrier && e.inflight[channel]);
    }
    // kernel: the kernel of the channel's head, (channel, epoch) (none: empty).
    Kernel kernel(int channel) const {
        const auto& queue = e.channels[channel];
        if (queue.empty()) return {};
        return {channel, epoch[channel] + (e.wgs[queue.front()].barrier ? 1 : 0)};
    }
    // has_wgs: `kernel` has a WG that may start now (its channel's head).
    bool has_wgs(const Kernel& k) const {
        return !k.none() && launchable(k.channel) && kernel(k.channel) == k;
    }
    bool any_channel() const { return e.any_heads(); }

    // RecordingMatcher.peu_fits: every PEU's wave group of `row` fits its free slots, and
    // the WG's registers and LDS fit in the policy's units.
    bool peu_fits(const WorkGroup& wg, int ap, const std::vector<int>& row) const {
        for (int q = 0; q < e.cfg.peus; ++q)
            if (row[q] > e.res.slot(ap, q)) return false;
        return units.fits(wg, ap, row);
    }

    // largest_range_plan: MIAOW's placement on the seed's blocks (the start of the largest
    // free range of each need, the lowest address among equal ranges).
    bool largest_range_plan(const WorkGroup& wg, int ap, const std::vector<int>& waves, Allocation& a) const {
        const int Q = e.cfg.peus, base = ap * Q;
        a.vgpr.assign(Q, Placed{});
        a.sgpr.assign(Q, Placed{});
        a.lds = Placed{};
        for (int r = 0; r < 2; ++r) {
            const int per_wave = r == VGPR ? wg.vgpr : wg.sgpr;
            for (int q = 0; q < Q; ++q) {
                const int need = waves[q] * per_wave;
                if (!need) continue;
                const auto [start, length] = largest_free_block(e.res.bits[r][base + q]);
                if (length < need) return false;
                (r == VGPR ? a.vgpr : a.sgpr)[q] = {start, need};
            }
        }
        if (wg.lds) {
            const auto [start, length] = largest_free_block(e.res.bits[LDS][ap]);
            if (length < wg.lds) return false;
            a.lds = {start, wg.lds};
        }
        return true;
    }
    // model.maxblock.largest_free_block: (start, length) of the longest free run, the lowest
    // start among equals; (0, 0) when none is free.
    static std::pair<int, int> largest_free_block(const Bits<W>& free) {
        const int length = longest_run(free);
        if (!length) return {0, 0};
        return {first_fit(free, length), length};
    }

    // -- one dispatch (OwnClockSelector.dispatch) ---------------------------------------------
    // Place and commit the WG `index` on `ap` with `waves` per PEU (the baseline's
    // placement); `largest`: MIAOW's largest-range rule on the seed's blocks instead of
    // first fit. false when the current status cannot hold it.
    bool dispatch(int64_t index, int ap, const std::vector<int>& waves, int64_t cycle, bool largest = false) {
        const WorkGroup& wg = e.wgs[index];
        for (int q = 0; q < e.cfg.peus; ++q)
            if (waves[q] > e.res.slot(ap, q)) return false;
        Allocation a;
        bool planned;
        if (units.kind == BLOCKS)
            planned = largest ? largest_range_plan(wg, ap, waves, a)
                              : plan(e.res, ap, waves, wg.vgpr, wg.sgpr, wg.lds, a.vgpr, a.sgpr, a.lds);
        else
            planned = units.plan(wg, index, ap, waves, a);
        if (!planned) return false;
        a.waves = waves;
        e.take(index, ap, a, cycle);                 // Allocator.take
        ++version[ap];                               // matcher.taken: changed(ap)
        units.changed(ap, a.waves);
        const int channel = wg.channel;
        const bool barrier = wg.barrier;
        e.commit(index, channel, ap, std::move(a), cycle);
        if (barrier) ++epoch[channel];
        return true;
    }

    // OwnClockSelector.take: the WG leaves its channel's FIFO (MIAOW may take one not at
    // the head).
    void take(int channel, int64_t index) {
        auto& queue = e.channels[channel];
        if (!queue.empty() && queue.front() == index)
            queue.pop_front();
        else
            queue.erase(std::find(queue.begin(), queue.end(), index));
    }

    // DispatchSimulator.release's matcher.released: the units free what they placed, the
    // AP's record goes (ApRecords.live), counted for MIAOW's group locks.
    void released(const Allocation& a) {
        units.released(a.wg);
        ++version[a.ap];                             // changed(ap)
        units.changed(a.ap, a.waves);
        auto& held = records[a.ap];
        const int64_t id = e.wgs[a.wg].id;
        for (size_t i = 0; i < held.size(); ++i)
            if (held[i].id == id) {
                mark(a.ap, held[i], 0);
                held.erase(held.begin() + i);
                if (!released_on[a.ap]++) dirty.insert(a.ap);
                break;
            }
    }

    // ApRecords.record: a running WG's record on `ap` (its WF slots taken).
    void hold(int ap, Record record) {
        mark(ap, record, 1);
        records[ap].push_back(std::move(record));
    }
    void mark(int ap, const Record& record, char taken) {
        for (auto [q, s] : record.places) slots_taken[ap][size_t(q) * e.cfg.wave_slots + s] = taken;
        if (record.waves > 1) multi_wave[ap] += taken ? 1 : -1;
    }

    E& e;
    Units<W> units;
    std::vector<int64_t> epoch;
    std::vector<std::vector<Record>> records;    // per AP, the running WGs' records
    std::vector<int> released_on;                // per AP, records dropped since counted
    std::set<int> dirty;                         // the APs with some, in order
    std::vector<int64_t> version;                // per AP, its takes and releases (changed)
    std::vector<std::vector<char>> slots_taken;  // per AP, its records' WF slots [q * slots + s]
    std::vector<int> multi_wave;                 // per AP, its records of multi-wave WGs
};

}  // namespace core
