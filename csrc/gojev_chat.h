// gojev_chat: a C API over llama.cpp's common/chat.h, the chat-template path that llama-server's
// /apply-template endpoint runs (common_chat_templates_init + common_chat_templates_apply).
// Built by CMakeLists.txt into libgojev-chat.a; used by the Go package llamarender.
//
// Ownership: gojev_chat_init returns an object freed by gojev_chat_free; every char* written to
// an out parameter is malloc'd and freed by gojev_chat_string_free. No function keeps a pointer
// to its arguments. No C++ exception crosses this API: each becomes an error string.
#ifndef GOJEV_CHAT_H
#define GOJEV_CHAT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct llama_model;
typedef struct gojev_chat gojev_chat;

// gojev_chat_init parses a chat template. model may be NULL; when it is not, the BOS/EOS texts
// and add_bos/add_eos come from its vocab, as in llama-server. tmpl is the Jinja source; NULL or
// "" uses the model's tokenizer.chat_template (llama.cpp falls back to ChatML when it has none).
// bos/eos override the token texts when model is NULL. On failure returns NULL and sets *err.
gojev_chat * gojev_chat_init(const struct llama_model * model, const char * tmpl, const char * bos,
                             const char * eos, char ** err);
void gojev_chat_free(gojev_chat * chat);

// gojev_chat_apply renders n_msgs messages (roles[i], contents[i]) as llama-server's
// /apply-template does for {"messages": ..., "chat_template_kwargs": ...}: use_jinja, the
// DeepSeek reasoning format, enable_thinking as the server decides it (on when the template
// supports it, overridden by an "enable_thinking" kwarg), kwargs values given as JSON text.
// now_unix_ms is the clock templates read (strftime_now, date_string); llama-server uses the
// wall clock. Returns 0 and sets *out, or -1 and sets *err.
int gojev_chat_apply(const gojev_chat * chat, size_t n_msgs, const char * const * roles,
                     const char * const * contents, size_t n_kwargs, const char * const * keys,
                     const char * const * values_json, int add_generation_prompt,
                     int64_t now_unix_ms, char ** out, char ** err);

// gojev_chat_source returns the template source in use (owned by chat).
const char * gojev_chat_source(const gojev_chat * chat);

void gojev_chat_string_free(char * s);

#ifdef __cplusplus
}
#endif

#endif
