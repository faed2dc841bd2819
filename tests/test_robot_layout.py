"""The Model/Data layouts of models/model_data.py: written once as their fields' sizes, their
offsets taken once as constants (MODEL_LAYOUT, DATA_LAYOUT) that the accessors fold in."""
import numpy as np
import pytest

from blocksim.models import model_data as md
from blocksim.models.robot import RobotModel


@pytest.mark.parametrize("n, B", [(1, 1), (2, 1), (2, 3), (6, 1), (6, 1000), (7, 5)])
def test_the_layout_constants_are_the_running_sums_of_the_sizes(n, B):
    at = md._at.py_func
    for layout, sizes in ((md.MODEL_LAYOUT, md._model_sizes(n)), (md.DATA_LAYOUT, md._data_sizes(n, B))):
        start = 0
        for (c_start, c_size), size in zip(layout, sizes):
            assert (at(c_start, n, B), at(c_size, n, B)) == (start, size)
            start += size
    assert md.model_size(n) == sum(md._model_sizes(n)) and md.data_size(n, B) == sum(md._data_sizes(n, B))


def test_fields_before_the_joint_sized_ones_have_constant_offsets():
    for field in (md.TOOL, md.GRAVITY, md.CLOSED_FORM):
        start, size = md.MODEL_LAYOUT[field]
        assert start[1:] == size[1:] == (0,) * 5
    start, size = md.DATA_LAYOUT[md.F1]
    assert start == (0,) * 6 and size == (6,) + (0,) * 5


def test_a_size_that_is_no_such_polynomial_is_refused():
    with pytest.raises(ValueError, match="polynomial"):
        md._coefficients(lambda n, B: (n ** 3, 1))


def test_data_fields_are_disjoint_and_cover_the_array():
    n, B = 3, 4
    data = md.make_data(n, B)
    views = [md.ws(data, n), md.joint_row(data, n, 0), md.f1(data, n), md.mass(data, n),
             md.chol(data, n), md.poses(data, n), md.v(data, n, B), md.acc_memo(data, n, B),
             md.pose_memo(data, n, B)]
    for k, view in enumerate(views):
        view[...] = k + 1
    joint = data[md._at.py_func(md.DATA_LAYOUT[md.JOINT][0], n, B):][:md.N_JOINT_ROWS * n]
    joint[...] = 2.0
    assert np.all(data > 0)
    assert sorted(np.unique(data).tolist()) == [float(k + 1) for k in range(len(views))]
    model = md.stack_model([RobotModel.preset("two_link")], True)
    np.testing.assert_array_equal(md.closed_form(model, 0),
                                  RobotModel.preset("two_link").closed_form.params())
