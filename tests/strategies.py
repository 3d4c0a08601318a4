"""Hypothesis strategies several test modules draw from."""

from __future__ import annotations

from hypothesis import strategies as st

#: JSON any encoder writes (no NaN or infinities), small: arbitrary bodies and params.
JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=5)
    ),
    max_leaves=20,
)
