/* What kvmicro knows per Hugging Face model_type: the defaults transformers' config class applies to a
 * field config.json leaves out, how the class lays out its layers, and the architectures the byte table
 * cannot model (with the reason). */
#ifndef KM_MODEL_ARCH_H
#define KM_MODEL_ARCH_H

typedef enum km_arch_layout {
  KM_ARCH_LAYOUT_GENERIC = 0,    /* from whichever pattern fields the config carries */
  KM_ARCH_LAYOUT_ALTERNATE,      /* sliding, full, sliding, ... (gemma2, gpt_oss when layer_types is absent) */
  KM_ARCH_LAYOUT_WINDOW_PATTERN, /* sliding_window_pattern - 1 sliding, then one full (gemma3_text) */
  KM_ARCH_LAYOUT_ALL_MAMBA,      /* every layer a Mamba-1 mixer (mamba, falcon_mamba) */
  KM_ARCH_LAYOUT_ALL_PARALLEL,   /* every layer attention + Mamba-2 side by side (falcon_h1) */
  KM_ARCH_LAYOUT_COUNT
} km_arch_layout;

typedef struct km_arch {
  const char *model_type;
  const char *source;        /* the transformers class whose defaults these are */
  const char *defaults_json; /* field defaults, as a JSON object (NULL: none) */
  km_arch_layout layout;
  const char *mamba_inner_key; /* field holding the Mamba conv width (NULL: expand x hidden_size) */
  int ssm_state_bytes;       /* vLLM's SSM state dtype when mamba_ssm_cache_dtype is auto (0: model dtype) */
  const char *unsupported;   /* non-NULL: why the byte table cannot model this architecture */
} km_arch;

/* The entry for model_type, or NULL when kvmicro has none (fields are then read by their generic names). */
const km_arch *km_arch_find(const char *model_type);

/* The text model's model_type inside a multimodal wrapper that does not name it (gemma3 -> gemma3_text);
 * model_type itself otherwise. */
const char *km_arch_text_type(const char *wrapper_type);

#endif
