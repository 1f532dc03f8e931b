"""flashkm: exact Lloyd k-means close to the hardware's limit.

``flashkm.KMeans`` is a drop-in replacement for ``sklearn.cluster.KMeans`` (same parameters,
attributes and methods, plus ``n_threads``), backed by the C++ engine: FlashAssign (fused
distance + argmin, no N x K matrix) and the Sort-Inverse Update (deterministic: the same bytes
for any number of threads).
"""

from ._batch import batch_kmeans
from ._core import available_half_targets, available_targets, default_target
from ._kmeans import KMeans
from ._minibatch import MiniBatchKMeans
from ._seeding import kmeans_plusplus

__all__ = ["KMeans", "MiniBatchKMeans", "batch_kmeans", "kmeans_plusplus", "available_targets", "available_half_targets",
           "default_target",
           "__version__"]
__version__ = "0.1.0"
