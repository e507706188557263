"""The OpenTelemetry sink: one instrument per series, made from the server's meter.

An attribute whose value is None is left out of the data point (``error.type`` on a
success, ``gen_ai.tool.name`` on anything but ``tools/call``), as the semantic conventions
want. The attribute mapping is built once per label values and reused.
"""

from __future__ import annotations

from typing import Any

from .names import DURATION_BUCKETS, Bound, Series, Values


class OpenTelemetrySink:
    """Records to OpenTelemetry instruments, created on first use of each series."""

    def __init__(self, meter: Any) -> None:
        self._meter = meter
        self._instruments: dict[str, Any] = {}

    def _instrument(self, series: Series) -> Any:
        instrument = self._instruments.get(series.otel)
        if instrument is None:
            meter = self._meter
            if series.kind == "histogram":
                try:
                    instrument = meter.create_histogram(
                        series.otel,
                        unit=series.unit,
                        description=series.description,
                        explicit_bucket_boundaries_advisory=list(DURATION_BUCKETS),
                    )
                except TypeError:  # an API older than 1.23 takes no bucket advice
                    instrument = meter.create_histogram(
                        series.otel, unit=series.unit, description=series.description
                    )
            elif series.kind == "counter":
                instrument = meter.create_counter(
                    series.otel, unit=series.unit, description=series.description
                )
            else:
                instrument = meter.create_up_down_counter(
                    series.otel, unit=series.unit, description=series.description
                )
            self._instruments[series.otel] = instrument
        return instrument

    def bind(self, series: Series, values: Values) -> Bound:
        instrument = self._instrument(series)
        attributes = {
            name: value for name, value in zip(series.labels, values, strict=True) if value
        }
        record = instrument.record if series.kind == "histogram" else instrument.add

        def recorded(amount: float) -> None:
            record(amount, attributes)

        return recorded
