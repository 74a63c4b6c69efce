// Package llamarender renders chat templates with llama.cpp's own template path: the
// common_chat_templates_init / common_chat_templates_apply functions of common/chat.h that
// llama-server's /apply-template endpoint runs, called in-process through a small C shim
// (csrc/gojev_chat.cpp). It is the second renderer beside package render's Go Jinja engine:
// `jev --renderer llama` renders exactly as the server would, without a server.
//
// Differences from Python Jinja2 that are llama.cpp's on purpose (measured on the 68-template
// corpus, see README): it supplies today's date as date_string (Llama 3.1/3.3) and datetime
// (firefunction-v2) unless Options.Now pins the clock, merges a system turn into the first user
// turn for templates that refuse a system role (Gemma 2), trims message whitespace for some
// templates (StepFun 3.5), and drops a leading BOS text when the model's vocab adds BOS itself
// (add_bos), since the server tokenizes with add_special.
package llamarender
