/* The per-model_type table. Each defaults object holds only fields the byte table reads, with the value
 * the named transformers config class assigns when config.json leaves the field out (an explicit null
 * in config.json is None and stays None: defaults fill absent keys only). */
#include "model_arch.h"

#include <string.h>

static const km_arch archs[] = {
    {"llama", "transformers LlamaConfig", "{\"max_position_embeddings\": 2048, \"rope_scaling\": null}",
     KM_ARCH_LAYOUT_GENERIC, NULL, 0, NULL},
    {"mistral", "transformers MistralConfig",
     "{\"num_key_value_heads\": 8, \"max_position_embeddings\": 131072, \"sliding_window\": 4096}",
     KM_ARCH_LAYOUT_GENERIC, NULL, 0, NULL},
    {"mixtral", "transformers MixtralConfig",
     "{\"num_key_value_heads\": 8, \"max_position_embeddings\": 131072, \"sliding_window\": null}",
     KM_ARCH_LAYOUT_GENERIC, NULL, 0, NULL},
    {"qwen2", "transformers Qwen2Config",
     "{\"num_key_value_heads\": 32, \"max_position_embeddings\": 32768, \"use_sliding_window\": false, "
     "\"sliding_window\": 4096, \"max_window_layers\": 28}",
     KM_ARCH_LAYOUT_GENERIC, NULL, 0, NULL},
    {"qwen3", "transformers Qwen3Config",
     "{\"num_key_value_heads\": 32, \"head_dim\": 128, \"max_position_embeddings\": 32768, "
     "\"use_sliding_window\": false, \"sliding_window\": 4096, \"max_window_layers\": 28}",
     KM_ARCH_LAYOUT_GENERIC, NULL, 0, NULL},
    {"qwen3_moe", "transformers Qwen3MoeConfig",
     "{\"num_key_value_heads\": 4, \"max_position_embeddings\": 32768, \"use_sliding_window\": false, "
     "\"sliding_window\": 4096, \"max_window_layers\": 28}",
     KM_ARCH_LAYOUT_GENERIC, NULL, 0, NULL},
    /* layer_types: linear_attention except every full_attention_interval-th layer */
    {"qwen3_next", "transformers Qwen3NextConfig",
     "{\"num_key_value_heads\": 2, \"head_dim\": 256, \"max_position_embeddings\": 32768, "
     "\"full_attention_interval\": 4, \"linear_conv_kernel_dim\": 4, \"linear_key_head_dim\": 128, "
     "\"linear_value_head_dim\": 128, \"linear_num_key_heads\": 16, \"linear_num_value_heads\": 32}",
     KM_ARCH_LAYOUT_GENERIC, NULL, 0, NULL},
    {"gemma2", "transformers Gemma2Config",
     "{\"num_attention_heads\": 8, \"num_key_value_heads\": 4, \"head_dim\": 256, \"hidden_size\": 2304, "
     "\"num_hidden_layers\": 26, \"max_position_embeddings\": 8192, \"sliding_window\": 4096}",
     KM_ARCH_LAYOUT_ALTERNATE, NULL, 0, NULL},
    {"gemma3_text", "transformers Gemma3TextConfig",
     "{\"num_attention_heads\": 8, \"num_key_value_heads\": 4, \"head_dim\": 256, \"hidden_size\": 2304, "
     "\"num_hidden_layers\": 26, \"max_position_embeddings\": 131072, \"sliding_window\": 4096, "
     "\"sliding_window_pattern\": 6}",
     KM_ARCH_LAYOUT_WINDOW_PATTERN, NULL, 0, NULL},
    {"gpt_oss", "transformers GptOssConfig",
     "{\"num_hidden_layers\": 36, \"num_attention_heads\": 64, \"num_key_value_heads\": 8, \"head_dim\": 64, "
     "\"hidden_size\": 2880, \"sliding_window\": 128, \"max_position_embeddings\": 131072, \"rope_scaling\": "
     "{\"rope_type\": \"yarn\", \"factor\": 32.0, \"original_max_position_embeddings\": 4096}}",
     KM_ARCH_LAYOUT_ALTERNATE, NULL, 0, NULL},
    {"deepseek_v2", "transformers DeepseekV2Config",
     "{\"kv_lora_rank\": 512, \"qk_rope_head_dim\": 64, \"qk_nope_head_dim\": 128, \"v_head_dim\": 128, "
     "\"max_position_embeddings\": 2048}",
     KM_ARCH_LAYOUT_GENERIC, NULL, 0, NULL},
    {"deepseek_v3", "transformers DeepseekV3Config",
     "{\"kv_lora_rank\": 512, \"qk_rope_head_dim\": 64, \"qk_nope_head_dim\": 128, \"v_head_dim\": 128, "
     "\"max_position_embeddings\": 4096}",
     KM_ARCH_LAYOUT_GENERIC, NULL, 0, NULL},
    {"phi3", "transformers Phi3Config", "{\"max_position_embeddings\": 4096, \"sliding_window\": null}",
     KM_ARCH_LAYOUT_GENERIC, NULL, 0, NULL},
    /* layers_block_type: attention where i % attn_layer_period == attn_layer_offset, Mamba-1 elsewhere */
    {"jamba", "transformers JambaConfig",
     "{\"num_key_value_heads\": 8, \"max_position_embeddings\": 262144, \"sliding_window\": null, "
     "\"attn_layer_period\": 8, \"attn_layer_offset\": 4, \"mamba_d_state\": 16, \"mamba_d_conv\": 4, "
     "\"mamba_expand\": 2}",
     KM_ARCH_LAYOUT_GENERIC, NULL, 0, NULL},
    /* vLLM main's NemotronHForCausalLMConfig (model_executor/models/config.py) sets mamba_ssm_cache_dtype
     * auto to the config's mamba_ssm_cache_dtype, else float32 ("only float32 is known to have no accuracy
     * issues") */
    {"nemotron_h", "transformers NemotronHConfig",
     "{\"num_attention_heads\": 32, \"num_key_value_heads\": 8, \"attention_head_dim\": 128, "
     "\"max_position_embeddings\": 4096, \"ssm_state_size\": 128, \"conv_kernel\": 4, \"n_groups\": 8, "
     "\"mamba_num_heads\": 128, \"mamba_head_dim\": 64}",
     KM_ARCH_LAYOUT_GENERIC, NULL, 4, NULL},
    /* MambaConfig / FalconMambaConfig compute intermediate_size = expand x hidden_size, then the
     * config.json value (when present) is set over it */
    {"mamba", "transformers MambaConfig", "{\"state_size\": 16, \"conv_kernel\": 4, \"expand\": 2}",
     KM_ARCH_LAYOUT_ALL_MAMBA, "intermediate_size", 0, NULL},
    {"falcon_mamba", "transformers FalconMambaConfig", "{\"state_size\": 16, \"conv_kernel\": 4, \"expand\": 2}",
     KM_ARCH_LAYOUT_ALL_MAMBA, "intermediate_size", 0, NULL},
    /* every layer runs attention and a Mamba-2 mixer in parallel; mamba_d_head "auto" = d_ssm / n_heads */
    {"falcon_h1", "transformers FalconH1Config",
     "{\"num_key_value_heads\": 8, \"max_position_embeddings\": 8192, \"mamba_d_ssm\": 1024, "
     "\"mamba_n_heads\": 128, \"mamba_d_head\": \"auto\", \"mamba_n_groups\": 1, \"mamba_d_state\": 256, "
     "\"mamba_d_conv\": 4, \"mamba_expand\": 2}",
     KM_ARCH_LAYOUT_ALL_PARALLEL, "mamba_d_ssm", 0, NULL},
    /* what the table cannot model: an error naming the reason, not a number that leaves the layer out */
    {"llama4", NULL, NULL, KM_ARCH_LAYOUT_GENERIC, NULL, 0,
     "chunked local attention layers (vLLM ChunkedLocalAttentionSpec) are not modelled"},
    {"mllama", NULL, NULL, KM_ARCH_LAYOUT_GENERIC, NULL, 0,
     "cross-attention layers (vLLM CrossAttentionSpec) are not modelled"},
    {"gemma3n", NULL, NULL, KM_ARCH_LAYOUT_GENERIC, NULL, 0, "KV sharing across layers is not modelled"},
    {"minimax", NULL, NULL, KM_ARCH_LAYOUT_GENERIC, NULL, 0, "lightning attention state is not modelled"},
    {"kimi_linear", NULL, NULL, KM_ARCH_LAYOUT_GENERIC, NULL, 0, "Kimi delta attention state is not modelled"},
    {"mamba2", NULL, NULL, KM_ARCH_LAYOUT_GENERIC, NULL, 0, "Mamba2Config's layout is not modelled"},
    {"zamba2", NULL, NULL, KM_ARCH_LAYOUT_GENERIC, NULL, 0, "shared attention blocks are not modelled"},
    {"bamba", NULL, NULL, KM_ARCH_LAYOUT_GENERIC, NULL, 0, "its layer layout is not modelled"},
    {"granitemoehybrid", NULL, NULL, KM_ARCH_LAYOUT_GENERIC, NULL, 0, "its layer layout is not modelled"},
    {"plamo2", NULL, NULL, KM_ARCH_LAYOUT_GENERIC, NULL, 0, "its layer layout is not modelled"},
    {"lfm2", NULL, NULL, KM_ARCH_LAYOUT_GENERIC, NULL, 0, "short convolution state is not modelled"},
    {"whisper", NULL, NULL, KM_ARCH_LAYOUT_GENERIC, NULL, 0, "encoder-decoder caches are not modelled"},
    {"t5", NULL, NULL, KM_ARCH_LAYOUT_GENERIC, NULL, 0, "encoder-decoder caches are not modelled"},
};

const km_arch *km_arch_find(const char *model_type) {
  for (size_t i = 0; model_type && i < sizeof archs / sizeof archs[0]; i++)
    if (strcmp(archs[i].model_type, model_type) == 0) return &archs[i];
  return NULL;
}

const char *km_arch_text_type(const char *wrapper_type) {
  /* Gemma3Config builds its text_config as a Gemma3TextConfig */
  if (wrapper_type && strcmp(wrapper_type, "gemma3") == 0) return "gemma3_text";
  return wrapper_type;
}
