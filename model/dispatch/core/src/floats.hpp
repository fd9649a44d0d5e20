// numpy's float64 reductions, operation for operation, so that the compiled core's sampled
// metrics are the Python model's bits: np.add.reduce's pairwise summation (blocks of 8
// accumulators up to 128 values, halves above), np.mean, np.std and
// model.stats.coefficient_of_variation. Compiled with -ffp-contract=off (no fused
// multiply-add).
#pragma once

#include <cmath>
#include <cstddef>
#include <vector>

namespace core {

inline double pairwise_sum(const double* a, size_t n) {
    if (n < 8) {
        double r = 0.0;
        for (size_t i = 0; i < n; ++i) r += a[i];
        return r;
    }
    if (n <= 128) {
        double r[8];
        for (int j = 0; j < 8; ++j) r[j] = a[j];
        size_t i = 8;
        for (; i < n - (n % 8); i += 8)
            for (int j = 0; j < 8; ++j) r[j] += a[i + j];
        double res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
        for (; i < n; ++i) res += a[i];
        return res;
    }
    size_t n2 = n / 2;
    n2 -= n2 % 8;
    return pairwise_sum(a, n2) + pairwise_sum(a + n2, n - n2);
}

inline double mean(const std::vector<double>& a) {
    return pairwise_sum(a.data(), a.size()) / static_cast<double>(a.size());
}

// model.stats.coefficient_of_variation: population std over mean, 0.0 when the mean is 0.
inline double coefficient_of_variation(const std::vector<double>& a) {
    if (a.empty()) return 0.0;
    const double m = mean(a);
    std::vector<double> squares(a.size());
    for (size_t i = 0; i < a.size(); ++i) {
        const double d = a[i] - m;
        squares[i] = d * d;
    }
    const double std = std::sqrt(pairwise_sum(squares.data(), squares.size()) /
                                 static_cast<double>(a.size()));
    return m != 0.0 ? std / m : 0.0;
}

}  // namespace core
