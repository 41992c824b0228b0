"""normlab from several Python threads, and normlab's own threads: the C++ layers' forward, backward
and the optimizers' step run without the GIL, so two Python threads training their own models run
at once in C++; each must end with exactly the weights it gets alone. And the thread count of the
kernels changes no result."""
import threading

import numpy as np

import normlab
from normlab import nn, optim


def build(seed, norm):
    """A 784-64-64-10 MLP with its SGD optimizer and data stream (weights from manual_seed(seed))."""
    normlab.manual_seed(seed)
    layer = {"batch": lambda: nn.BatchNorm1d(64), "layer": lambda: nn.LayerNorm(64)}[norm]
    model = nn.Sequential(nn.Linear(784, 64), layer(), nn.ReLU(), nn.Linear(64, 64), layer(), nn.ReLU(),
                          nn.Linear(64, 10))
    return model, optim.SGD(model.parameters(), lr=0.05, momentum=0.9), np.random.default_rng(seed)


def fit(model, opt, rng, steps=20):
    """`steps` SGD steps on random batches; the final state_dict."""
    for _ in range(steps):
        x = normlab.tensor(rng.normal(size=(64, 784)).astype(np.float32))
        y = rng.integers(0, 10, size=64)
        opt.zero_grad()
        normlab.cross_entropy(model(x), y).backward()
        opt.step()
    return model.state_dict()


def train(seed, norm, steps=20):
    return fit(*build(seed, norm), steps=steps)


def assert_same(a, b):
    assert list(a) == list(b)
    for k in a:
        np.testing.assert_array_equal(a[k], b[k], err_msg=k)


def test_python_threads_training_at_once_get_the_weights_they_get_alone():
    jobs = [(1, "batch"), (2, "layer"), (3, "batch"), (4, "layer")]
    alone = {j: train(*j) for j in jobs}
    # The models are built one after the other (manual_seed seeds one shared generator, as
    # torch.manual_seed does); the four trainings then run at the same time.
    built = {j: build(*j) for j in jobs}
    results, errors = {}, []

    def worker(job):
        try:
            results[job] = fit(*built[job])
        except Exception as e:  # reported below, not lost in the thread
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(j,)) for j in jobs]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert not errors, errors
    assert all(not t.is_alive() for t in threads)
    for j in jobs:
        assert_same(results[j], alone[j])


def test_the_kernel_thread_count_changes_no_result():
    before = normlab.get_num_threads()
    try:
        normlab.set_num_threads(1)
        one = train(5, "layer", steps=5)
        normlab.set_num_threads(2)
        two = train(5, "layer", steps=5)
    finally:
        normlab.set_num_threads(before)
    assert_same(one, two)
