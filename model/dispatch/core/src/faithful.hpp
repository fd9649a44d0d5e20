// The faithful baselines' own clock, as the engine sees it: model/dispatch/engine.py's
// `self.decision = self.selector.bind(self)` (step, and MIAOW's wake) for the selections
// of model/dispatch/gpgpusim.py, gem5.py and miaow.py, with what they share
// (ownclock.hpp) and their units (units.hpp).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "gem5.hpp"
#include "gpgpusim.hpp"
#include "miaow.hpp"
#include "ownclock.hpp"

namespace core {

template <class E, int W>
class Faithful {
public:
    explicit Faithful(E& engine) : own(engine) {
        const int selection = engine.rules.selection;
        if (selection == GPGPUSIM || selection == GPGPUSIM_CONCURRENT)
            gpgpusim.emplace(own, selection == GPGPUSIM_CONCURRENT);
        else if (selection == GEM5)
            gem5.emplace(own);
        else
            miaow.emplace(own, selection == MIAOW_ONE_CLOCK);
    }

    // The decision's step(cycle): (dispatched, awake, matched, waiting).
    void step(int64_t cycle, bool& dispatched, bool& awake, bool& matched, bool& waiting) {
        if (gpgpusim) gpgpusim->step(cycle, dispatched, awake, matched, waiting);
        else if (gem5) gem5->step(cycle, dispatched, awake, matched, waiting);
        else miaow->step(cycle, dispatched, awake, matched, waiting);
    }
    // The views of the APs `changed` changed (step 3): matcher.mark.
    void shown(const std::vector<int>& changed) {
        if (gem5) gem5->shown(changed);
    }
    // The decision's wake(cycle) (only MIAOW has one); -1: None.
    int64_t wake(int64_t cycle) { return miaow ? miaow->wake(cycle) : -1; }
    // MIAOW's buffer does not keep FIFO order (Queues.in_order).
    bool in_order() const { return !miaow; }
    // At the end of a run of `cycles`: MIAOW's quiet decisions replayed (Metrics._buffer).
    void finish(int64_t cycles) {
        if (miaow) miaow->finish(cycles);
    }
    // The result's `buffer` (MIAOW's decisions and rejections); false: None.
    bool buffer(int64_t& decisions, int64_t& rejections) const {
        if (!miaow) return false;
        decisions = miaow->decisions;
        rejections = miaow->rejections;
        return true;
    }

    OwnClock<E, W> own;
    std::optional<GpgpuSim<E, W>> gpgpusim;
    std::optional<Gem5<E, W>> gem5;
    std::optional<Miaow<E, W>> miaow;
};

}  // namespace core
