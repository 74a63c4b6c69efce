package report

// NiceScaleForTest exposes niceScale to the external tests.
var NiceScaleForTest = niceScale
