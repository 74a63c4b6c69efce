// See gojev_chat.h.
#include "gojev_chat.h"

#include "chat.h"
#include "log.h"

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <map>
#include <mutex>
#include <string>

struct gojev_chat {
    common_chat_templates_ptr tmpls;
    bool                      supports_thinking = false;
    std::string               source;
};

static char * dup_string(const std::string & s) {
    char * p = static_cast<char *>(std::malloc(s.size() + 1));
    if (p) {
        std::memcpy(p, s.data(), s.size());
        p[s.size()] = '\0';
    }
    return p;
}

static void set_err(char ** err, const char * what) {
    if (err) {
        *err = dup_string(what ? what : "unknown error");
    }
}

// common's log (LOG_ERR/LOG_WRN in chat.cpp) writes to stderr from a worker thread and has no
// callback to route it through Go's slog. Its worker is paused, which discards the messages;
// every failure still reaches Go, as the exception text returned in *err.
static void quiet_common_log() {
    static std::once_flag once;
    std::call_once(once, [] { common_log_pause(common_log_main()); });
}

extern "C" gojev_chat * gojev_chat_init(const struct llama_model * model, const char * tmpl,
                                        const char * bos, const char * eos, char ** err) {
    quiet_common_log();
    try {
        auto * chat = new gojev_chat();
        std::string src = tmpl ? tmpl : "";
        chat->tmpls = common_chat_templates_init(model, src, bos ? bos : "", eos ? eos : "");
        chat->supports_thinking = common_chat_templates_support_enable_thinking(chat->tmpls.get());
        chat->source = common_chat_templates_source(chat->tmpls.get());
        return chat;
    } catch (const std::exception & e) {
        set_err(err, e.what());
    } catch (...) {
        set_err(err, "non-standard C++ exception");
    }
    return nullptr;
}

extern "C" void gojev_chat_free(gojev_chat * chat) { delete chat; }

extern "C" const char * gojev_chat_source(const gojev_chat * chat) { return chat->source.c_str(); }

extern "C" int gojev_chat_apply(const gojev_chat * chat, size_t n_msgs, const char * const * roles,
                                const char * const * contents, size_t n_kwargs,
                                const char * const * keys, const char * const * values_json,
                                int add_generation_prompt, int64_t now_unix_ms, char ** out,
                                char ** err) {
    try {
        common_chat_templates_inputs inputs;
        for (size_t i = 0; i < n_msgs; i++) {
            common_chat_msg msg;
            msg.role    = roles[i];
            msg.content = contents[i];
            inputs.messages.push_back(std::move(msg));
        }
        // As oaicompat_chat_params_parse (tools/server/server-common.cpp) sets them for a
        // request with only messages and chat_template_kwargs, under the server's defaults.
        inputs.use_jinja             = true;
        inputs.add_generation_prompt = add_generation_prompt != 0;
        inputs.reasoning_format      = COMMON_REASONING_FORMAT_DEEPSEEK;
        inputs.enable_thinking       = chat->supports_thinking;
        for (size_t i = 0; i < n_kwargs; i++) {
            inputs.chat_template_kwargs[keys[i]] = values_json[i];
        }
        auto it = inputs.chat_template_kwargs.find("enable_thinking");
        if (it != inputs.chat_template_kwargs.end()) {
            if (it->second == "true") {
                inputs.enable_thinking = true;
            } else if (it->second == "false") {
                inputs.enable_thinking = false;
            } else if (!it->second.empty() && it->second[0] == '"') {
                set_err(err, "invalid type for \"enable_thinking\" (expected boolean, got string)");
                return -1;
            }
        }
        inputs.now = std::chrono::system_clock::time_point(std::chrono::milliseconds(now_unix_ms));
        auto params = common_chat_templates_apply(chat->tmpls.get(), inputs);
        *out = dup_string(params.prompt);
        return *out ? 0 : -1;
    } catch (const std::exception & e) {
        set_err(err, e.what());
    } catch (...) {
        set_err(err, "non-standard C++ exception");
    }
    return -1;
}

extern "C" void gojev_chat_string_free(char * s) { std::free(s); }
