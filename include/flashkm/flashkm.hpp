// Umbrella header of the flashkm C++ API.
#pragma once

#include "flashkm/batch.hpp"
#include "flashkm/errors.hpp"
#include "flashkm/half.hpp"
#include "flashkm/kmeans.hpp"
#include "flashkm/matrix_view.hpp"
#include "flashkm/options.hpp"
#include "flashkm/result.hpp"
#include "flashkm/sparse.hpp"
