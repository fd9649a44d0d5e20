// The resource units a faithful baseline counts and places: the compiled twin of
// model/dispatch/units.py (Units, ApRangeUnits, CountedUnits, WaveRegionUnits, idle_reason),
// on the same status registers (Resources) as the seed. A bit-mask placement is a Placed
// with `mask` words (Resources::change takes both, as Resources.change_plan does).
//
// The Python units cache per AP (largest ranges, region counts) until the AP changes
// (changed: a take or a release there); neither cache changes a result. Here both are kept
// the same way.
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "stages.hpp"

namespace core {

enum UnitKind : int { BLOCKS = 0, AP_RANGE = 1, COUNTED = 2, WAVE_REGIONS = 3 };

// The lowest set bit of `bits` at or after `from` (W * 64: none); `invert`: the lowest clear one.
template <int W>
int next_bit(const Bits<W>& bits, int from, bool invert) {
    for (int i = from >> 6; i < W; ++i) {
        uint64_t x = invert ? ~bits.w[i] : bits.w[i];
        if (i == (from >> 6)) x &= ~uint64_t{0} << (from & 63);
        if (x) return i * 64 + std::countr_zero(x);
    }
    return W * 64;
}

// Calls run(start, length) for every run of set bits of `free`, lowest first.
template <int W, class F>
void for_each_run(const Bits<W>& free, F&& run) {
    for (int at = 0; at < W * 64;) {
        const int start = next_bit(free, at, false);
        if (start >= W * 64) break;
        at = next_bit(free, start, true);
        run(start, at - start);
    }
}

// model.dispatch.units.free_runs: (start, length) of every run of set bits, lowest first.
template <int W>
std::vector<std::pair<int, int>> free_runs(const Bits<W>& free) {
    std::vector<std::pair<int, int>> runs;
    for_each_run(free, [&](int start, int length) { runs.push_back({start, length}); });
    return runs;
}

// model.dispatch.units.regions: sum(run // size) over the free runs (gem5's canAllocate).
template <int W>
int regions(const Bits<W>& free, int size) {
    int count = 0;
    for_each_run(free, [&](int, int length) { count += length / size; });
    return count;
}

// model.dispatch.units.lowest_free: the `count` lowest set bits of `free`.
template <int W>
Bits<W> lowest_free(const Bits<W>& free, int count) {
    if (count >= free.count()) return free;
    Bits<W> out;
    for (int i = 0; i < W && count; ++i)
        for (uint64_t x = free.w[i]; x && count; x &= x - 1, --count) out.w[i] |= x & -x;
    return out;
}

// A placed need as a bit mask (model.dispatch.resources.first_block gives its lowest block).
template <int W>
Placed mask_placed(const Bits<W>& mask) {
    Placed p;
    p.start = mask.lowest();
    p.length = mask.count();
    p.mask = mask.words();
    return p;
}

// model.dispatch.units.Units and its subclasses, by `kind`.
template <int W>
class Units {
public:
    Units(int kind, const Config& c, const View<W>& v, const Resources<W>& r)
        : kind(kind), cfg(c), view(v), res(r) {
        for (int name = 0; name < 2; ++name) lists[name].resize(size_t(c.aps) * c.peus);
        largest.resize(c.aps);
        largest_kept.assign(c.aps, 0);
        for (int name = 0; name < 2; ++name) {
            listed[name].assign(size_t(c.aps) * c.peus, 0);
            region_counts[name].resize(size_t(c.aps) * c.peus);
        }
    }

    // Units.changed: ap's status changed (a take or a release of `waves` per PEU there): drop
    // what is kept for it (the region counts of the PEUs whose registers changed: they are
    // the counts of their bits).
    void changed(int ap, const std::vector<int>& waves) {
        largest_kept[ap] = 0;
        for (int q = 0; q < cfg.peus; ++q)
            if (waves[q])
                for (int name = 0; name < 2; ++name) region_counts[name][size_t(ap) * cfg.peus + q].clear();
    }

    // regions(res.bits[r][index], size), kept per PEU and size until its AP changes
    // (WaveRegionUnits.capacity's cache).
    int regions_of(int r, int index, int size) const {
        auto& kept = region_counts[r][index];
        for (const auto& [at, count] : kept)
            if (at == size) return count;
        const int count = regions(res.bits[r][index], size);
        kept.push_back({size, count});
        return count;
    }

    // ApRangeUnits.largest_ranges: the AP's words of resource r end to end (PEU 0 lowest;
    // LDS is one word): its free runs, merged across the PEUs' words.
    std::vector<std::pair<int, int>> ap_runs(int r, int ap) const {
        if (r == LDS) return free_runs(res.bits[LDS][ap]);
        std::vector<std::pair<int, int>> runs;
        const int size = cfg.size[r], base = ap * cfg.peus;
        for (int q = 0; q < cfg.peus; ++q)
            for (auto [start, length] : free_runs(res.bits[r][base + q])) {
                const int at = q * size + start;
                if (!runs.empty() && runs.back().first + runs.back().second == at)
                    runs.back().second += length;
                else
                    runs.push_back({at, length});
            }
        return runs;
    }
    // The length of the longest run (longest_run_unchecked) and the lowest start of one
    // that long (first_fit_unchecked(word, longest)).
    static std::pair<int, int> largest_of(const std::vector<std::pair<int, int>>& runs) {
        std::pair<int, int> best{-1, 0};
        for (auto [start, length] : runs)
            if (length > best.second) best = {start, length};
        return best;
    }
    // ApRangeUnits.largest_ranges: (start, length) of each resource's, kept until ap changes.
    const std::pair<int, int>& largest_range_at(int r, int ap) const {
        if (!largest_kept[ap]) {
            for (int k = 0; k < 3; ++k) largest[ap][k] = largest_of(ap_runs(k, ap));
            largest_kept[ap] = 1;
        }
        return largest[ap][r];
    }
    int largest_range(int r, int ap) const { return largest_range_at(r, ap).second; }

    // Units.fits (the resource part of the fit test; wave slots are the matcher's).
    bool fits(const WorkGroup& wg, int ap, const std::vector<int>& row) const {
        const int Q = cfg.peus, base = ap * Q;
        switch (kind) {
            case BLOCKS:
                if (wg.lds > view.view[LDS][ap]) return false;
                for (int q = 0; q < Q; ++q) {
                    const int64_t count = row[q];
                    if (count && (count * wg.vgpr > view.view[VGPR][base + q] ||
                                  count * wg.sgpr > view.view[SGPR][base + q]))
                        return false;
                }
                return true;
            case AP_RANGE:                          // ApRangeUnits.fits
                return int64_t(wg.waves) * wg.vgpr <= largest_range(VGPR, ap) &&
                       int64_t(wg.waves) * wg.sgpr <= largest_range(SGPR, ap) &&
                       wg.lds <= largest_range(LDS, ap);
            case COUNTED: {                         // CountedUnits.fits
                int64_t vgpr = 0, sgpr = 0;
                for (int q = 0; q < Q; ++q) {
                    vgpr += res.free[VGPR][base + q];
                    sgpr += res.free[SGPR][base + q];
                }
                return int64_t(wg.waves) * wg.vgpr <= vgpr && int64_t(wg.waves) * wg.sgpr <= sgpr &&
                       wg.lds <= res.free[LDS][ap];
            }
            default:                                // WaveRegionUnits.fits
                if (wg.lds > res.free[LDS][ap]) return false;
                for (int q = 0; q < Q; ++q)
                    if (row[q] && row[q] > capacity(wg, ap, q)) return false;
                return true;
        }
    }

    // Units.capacity: how many of wg's waves PEU q of ap holds by its registers.
    int capacity(const WorkGroup& wg, int ap, int q) const {
        const int index = ap * cfg.peus + q;
        if (kind == BLOCKS) {
            int cap = wg.waves;
            if (wg.vgpr) cap = std::min(cap, view.view[VGPR][index] / wg.vgpr);
            if (wg.sgpr) cap = std::min(cap, view.view[SGPR][index] / wg.sgpr);
            return cap;
        }
        if (kind != WAVE_REGIONS) return wg.waves;   // registers are the AP's, not a PEU's
        int cap = 1 << 30;
        if (wg.vgpr) cap = std::min(cap, regions_of(VGPR, index, wg.vgpr));
        if (wg.sgpr) cap = std::min(cap, regions_of(SGPR, index, wg.sgpr));
        return std::min(cap, wg.waves);
    }

    // Units.plan: what wg takes on ap with `waves` per PEU (false: it does not fit). Not
    // asked for blocks (the selector's own rule places those).
    bool plan(const WorkGroup& wg, int64_t index, int ap, const std::vector<int>& waves, Allocation& a) {
        if (!fits(wg, ap, waves)) return false;
        const int Q = cfg.peus, base = ap * Q;
        a.vgpr.assign(Q, Placed{});
        a.sgpr.assign(Q, Placed{});
        a.lds = Placed{};
        const int per_wave[2] = {wg.vgpr, wg.sgpr};
        if (kind == AP_RANGE) {                     // ApRangeUnits.plan
            for (int r = 0; r < 2; ++r) {
                const int need = wg.waves * per_wave[r], size = cfg.size[r];
                if (!need) continue;
                const int start = largest_range_at(r, ap).first, end = start + need;
                std::vector<Placed>& out = r == VGPR ? a.vgpr : a.sgpr;
                for (int q = start / size; q <= (end - 1) / size; ++q) {
                    const int low = std::max(start, q * size), high = std::min(end, (q + 1) * size);
                    out[q] = {low - q * size, high - low};
                }
            }
            if (wg.lds) a.lds = {largest_range_at(LDS, ap).first, wg.lds};
            return true;
        }
        if (kind == COUNTED) {                      // CountedUnits.plan, take_lowest
            if (wg.lds) a.lds = mask_placed(lowest_free(res.bits[LDS][ap], wg.lds));
            for (int r = 0; r < 2; ++r) {
                int need = wg.waves * per_wave[r];
                for (int q = 0; q < Q && need; ++q) {
                    const Bits<W>& word = res.bits[r][base + q];
                    const int count = std::min(need, word.count());
                    if (count) {
                        (r == VGPR ? a.vgpr : a.sgpr)[q] = mask_placed(lowest_free(word, count));
                        need -= count;
                    }
                }
            }
            return true;
        }
        // WaveRegionUnits.plan: each wave's region at the first record of gem5's free list
        // that holds it (allocateRegion). The lists change here at once (Python keeps the new
        // ones until `taken`: a plan is always taken, model.dispatch.ownclock.dispatch).
        std::vector<Region> made;
        for (int r = 0; r < 2; ++r) {
            const int size = per_wave[r];
            for (int q = 0; q < Q; ++q) {
                if (!waves[q] || !size) continue;
                const int at_index = base + q;
                auto& records = free_list(r, at_index);
                Bits<W> mask;
                Region region{r, at_index, size, {}};
                for (int k = 0; k < waves[q]; ++k) {
                    size_t at = 0;
                    while (at < records.size() && records[at].second - records[at].first < size) ++at;
                    if (at == records.size())
                        throw std::runtime_error(std::string(resource_name(r)) + "[" + std::to_string(at_index) +
                                                 "]: gem5's free list holds no region where the fit test counted one");
                    const int first = records[at].first;
                    if (records[at].second - first == size)
                        records.erase(records.begin() + at);
                    else
                        records[at].first = first + size;
                    region.starts.push_back(first);
                    mask |= Bits<W>::range(first, size);
                }
                (r == VGPR ? a.vgpr : a.sgpr)[q] = mask_placed(mask);
                made.push_back(std::move(region));
            }
        }
        placed[index] = std::move(made);
        if (wg.lds) a.lds = mask_placed(lowest_free(res.bits[LDS][ap], wg.lds));
        return true;
    }

    // WaveRegionUnits.released: freeRegion of each wave's region, in the order placed.
    void released(int64_t index) {
        if (kind != WAVE_REGIONS) return;
        auto found = placed.find(index);
        for (const Region& region : found->second) {
            auto& records = free_list(region.resource, region.index);
            for (int first : region.starts) {
                const int end = first + region.size;
                int before = -1, after = -1;
                for (size_t i = 0; i < records.size(); ++i) {
                    if (records[i].second == first) before = int(i);
                    else if (records[i].first == end) after = int(i);
                }
                if (before >= 0 && after >= 0) {
                    records[before].second = records[after].second;
                    records.erase(records.begin() + after);
                } else if (before >= 0) {
                    records[before].second = end;
                } else if (after >= 0) {
                    records[after].first = first;
                } else {
                    records.push_back({first, end});
                }
            }
        }
        placed.erase(found);
    }

    // model.dispatch.units.idle_reason: why wg cannot fit an idle AP ("" when it can).
    std::string idle_reason(const WorkGroup& wg) const {
        const int Q = cfg.peus, waves = wg.waves;
        const int per_wave[2] = {wg.vgpr, wg.sgpr};
        const char* upper[2] = {"VGPR", "SGPR"};
        if (waves > Q * cfg.wave_slots)
            return std::to_string(waves) + " waves, but an AP has " + std::to_string(Q * cfg.wave_slots) +
                   " wave slots";
        for (int r = 0; r < 2; ++r) {
            if (kind == WAVE_REGIONS) {
                const int busiest = (waves + Q - 1) / Q, size = cfg.size[r];
                if (per_wave[r] && busiest > size / per_wave[r])
                    return std::to_string(busiest) + " waves of " + std::to_string(per_wave[r]) + " " + upper[r] +
                           " blocks on one PEU, but an idle PEU holds " + std::to_string(size / per_wave[r]) +
                           " such regions";
            } else {
                const int64_t need = int64_t(waves) * per_wave[r], size = int64_t(Q) * cfg.size[r];
                if (need > size)
                    return std::to_string(waves) + " waves x " + std::to_string(per_wave[r]) + " " + upper[r] +
                           " blocks = " + std::to_string(need) + ", but an idle AP has " + std::to_string(size);
            }
        }
        if (wg.lds > cfg.size[LDS])
            return std::to_string(wg.lds) + " LDS blocks, but an idle AP has " + std::to_string(cfg.size[LDS]);
        return "";
    }

    int kind;

private:
    struct Region {
        int resource, index, size;
        std::vector<int> starts;
    };

    // WaveRegionUnits.free_list: [first, end) records in list order, made from the word's
    // runs when first used.
    std::vector<std::pair<int, int>>& free_list(int r, int index) {
        auto& records = lists[r][index];
        if (!listed[r][index]) {
            listed[r][index] = 1;
            for (auto [start, length] : free_runs(res.bits[r][index])) records.push_back({start, start + length});
        }
        return records;
    }

    const Config& cfg;
    const View<W>& view;
    const Resources<W>& res;
    std::vector<std::vector<std::pair<int, int>>> lists[2];
    std::vector<char> listed[2];                                // per PEU: its list made
    mutable std::vector<std::vector<std::pair<int, int>>> region_counts[2];   // per PEU: (size, count)
    std::unordered_map<int64_t, std::vector<Region>> placed;   // by WG index, its regions
    mutable std::vector<std::array<std::pair<int, int>, 3>> largest;   // per AP (ap_range)
    mutable std::vector<char> largest_kept;
};

}  // namespace core
