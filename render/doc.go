// Package render renders chat messages through a model's chat template (Jinja) in pure Go,
// as Hugging Face transformers' apply_chat_template renders them with Python Jinja2:
// trim_blocks and lstrip_blocks, loop controls, raise_exception, tojson (ensure_ascii=False),
// strftime_now, bos_token/eos_token, add_generation_prompt, and chat_template_kwargs as
// template variables that keep their JSON types ({"enable_thinking": false} renders False).
//
// The engine is github.com/ardanlabs/jinja (built for GGUF chat templates); this package adds
// what transformers adds around Jinja2: source normalisation (CRLF, one final newline),
// a strftime_now that reads a clock the caller can pin, raise_exception as a typed error, and
// the messages as ordered dicts. It knows nothing of llama.cpp.
//
// Measured on the 68 templates shipped with the pinned llama.cpp (models/templates), with the
// decision messages: every one of the 66 that Python Jinja2 renders is byte-identical here; of
// the two Python refuses, google-gemma-2-2b-it raises in both, and the firefunction-v2
// template (which serialises an undefined "functions") renders here instead of raising.
// tools and documents are left undefined, as when no tools are offered.
//
// Known differences from Python Jinja2, each pinned by a test: None prints as "" instead of
// "None", and an attribute of an undefined value renders empty instead of raising
// UndefinedError. Neither occurs in the corpus with the decision messages.
package render
