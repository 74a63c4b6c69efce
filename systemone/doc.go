// Package systemone speaks TypeSafe's System One API, the interface programs use to ask
// decision models typed questions about a state: POST /v1/systemone with named choice, score
// and noul questions, and GET /v1/models. Its official client is the Python package
// typesafe-sdk; this package's shapes are the ones that client parses (strictly), tested
// against it, and against jev-eval and jevkit's jev-grep.
//
//   - NewHandler serves the API over a gojev.Decider (jev serve is a Handler with flags):
//     bearer keys, loopback-only Host and same-origin checks without them (--allowed-origins for
//     browsers), JSON bodies (zstd and gzip, limited after decompressing), FastAPI-shaped 422
//     errors, admission by the work a request brings against a queue whose wait is estimated
//     from the measured decode rate (429 with Retry-After at once, never a wait that ends in a
//     timeout), a drain that finishes what it accepted, Prometheus /metrics, /healthz and
//     /readyz.
//   - Client calls a server of the API over HTTP.
//   - Local answers requests in this process with a Decider (gojev.Decider.Ask).
//   - Client and Local implement Asker, so a program moves between in-process decisions and a
//     remote server by changing one line.
//   - ParseRequest and ParseQuestions read the API's JSON as it validates it; Request,
//     Response and Answer marshal as the API writes them.
//
// docs/typed-questions.md describes how each question type is decided (choice and score as
// rows of the seed's direct contract, noul under noul-v1), what each figure means, how to point
// each popular client at jev serve, and how to run it behind a reverse proxy.
package systemone
