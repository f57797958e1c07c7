#!/usr/bin/env python3
"""A tiny random-weight CodeT5+ 2B/6B/16B-shaped encoder-decoder (`model_type: codet5p`,
`CodeT5pEncoderDecoderModel`) and the outputs of its RELEASED modelling code: the fixture
tests/fixtures/tiny_codet5p of tests/it/codet5p_reference.rs.

The released code is not part of transformers: it ships in the hub repositories
(Salesforce/codet5p-2b, -6b, -16b, instructcodet5p-16b) as `configuration_codet5p.py` and
`modeling_codet5p.py` (written for transformers 4.21-4.30). The classes below are copied
from those two files, as two independent public copies hold them (they agree line for
line on everything used here); only the generation helpers, gradient checkpointing and
docstrings are left out, and no line of the computation is changed. They are reference
code for this fixture, not codescope's.

What the released code computes (and codescope must match):
- Encoder: `CodeT5pModel` (CodeGen blocks) with `is_decoder: false`: BIDIRECTIONAL
  self-attention (the causal mask is applied only when `is_decoder`), no LM head.
- Decoder: `CodeT5pForCausalLM` (CodeGen blocks, causal) whose LAST block only has a
  cross-attention (`add_cross_attention` and `layer_idx == n_layer - 1`), computed from
  the same `ln_1` output and added in parallel: `x = attn + xattn + mlp + x`.
- Cross-attention: `q_attn` (queries, no mp split of consequence) and `qkv_proj` over the
  encoder states, 4 shards of `[v | k]`; rotary (the first `rotary_dim` features, GPT-J
  interleaved) on the queries at decoder positions and on the keys at encoder positions;
  no mask.
- `enc_to_dec_proj` (Linear with bias) maps the encoder's last hidden state to the
  decoder's width when the widths differ (2B: 1024 -> 2560).
- No embedding is shared: the encoder's `wte`, the decoder's `wte` and its `lm_head`
  (with bias) are separate tensors (`tie_word_embeddings` and `tie_encoder_decoder` false).

A bug of the released code: `CodeT5pModel.forward` with `output_attentions=True` reads
`self.add_cross_attention_by_layer`, an attribute only the blocks have, so the decoder
raises AttributeError (checked below). The script sets that attribute to False on the
decoder's `CodeT5pModel` instance (it then collects the self-attentions, as intended)
and reads the one cross-attention with a forward hook; neither changes a value.

Environment (pinned): transformers 4.30.2 (the released code's era; it does not run on
transformers 5), huggingface_hub 0.16.4, tokenizers 0.13.3, in a venv at
/tmp/ref-codet5p whose remaining packages (torch 2.15.0, numpy, safetensors) come from
the project's reference venv (tools/reference/requirements-lock.txt):
  python -m venv /tmp/ref-codet5p
  echo /tmp/ref/lib/python3.11/site-packages > /tmp/ref-codet5p/lib/python3.11/site-packages/zz_ref.pth
  /tmp/ref-codet5p/bin/pip install --no-deps transformers==4.30.2 huggingface_hub==0.16.4 tokenizers==0.13.3
  /tmp/ref-codet5p/bin/pip install requests
The tokenizer runs in the reference venv itself (REF_PYTHON, default /tmp/ref/bin/python).
Run from the repository root:
  /tmp/ref-codet5p/bin/python tools/reference/tiny_codet5p_reference.py
"""
import copy
import json
import math
import os
import shutil
from typing import Optional, Tuple, Union

import torch
import transformers
from safetensors.torch import save_file
import subprocess
import sys
from torch import nn
from transformers.activations import ACT2FN
from transformers.configuration_utils import PretrainedConfig
from transformers.modeling_outputs import BaseModelOutput, BaseModelOutputWithPastAndCrossAttentions, \
    CausalLMOutputWithCrossAttentions, Seq2SeqLMOutput
from transformers.modeling_utils import PreTrainedModel

assert transformers.__version__ == "4.30.2", transformers.__version__

OUT = "tests/fixtures/tiny_codet5p"
SNIPPETS = "tests/fixtures/snippets"
REF_PYTHON = os.environ.get("REF_PYTHON", "/tmp/ref/bin/python")


# ---- configuration_codet5p.py (released) ------------------------------------------------

class CodeT5pModuleConfig(PretrainedConfig):
    model_type = "codet5p_module"
    attribute_map = {
        "max_position_embeddings": "n_positions",
        "hidden_size": "n_embd",
        "num_attention_heads": "n_head",
        "num_hidden_layers": "n_layer",
    }

    def __init__(self, vocab_size=50400, n_positions=2048, n_ctx=2048, n_embd=4096, n_layer=28, n_head=16,
                 rotary_dim=64, n_inner=None, activation_function="gelu_new", resid_pdrop=0.0, embd_pdrop=0.0,
                 attn_pdrop=0.0, layer_norm_epsilon=1e-5, initializer_range=0.02, scale_attn_weights=True,
                 use_cache=True, bos_token_id=50256, eos_token_id=50256, tie_word_embeddings=False, **kwargs):
        self.vocab_size = vocab_size
        self.n_ctx = n_ctx
        self.n_positions = n_positions
        self.n_embd = n_embd
        self.n_layer = n_layer
        self.n_head = n_head
        self.n_inner = n_inner
        self.rotary_dim = rotary_dim
        self.activation_function = activation_function
        self.resid_pdrop = resid_pdrop
        self.embd_pdrop = embd_pdrop
        self.attn_pdrop = attn_pdrop
        self.layer_norm_epsilon = layer_norm_epsilon
        self.initializer_range = initializer_range
        self.scale_attn_weights = scale_attn_weights
        self.use_cache = use_cache
        self.bos_token_id = bos_token_id
        self.eos_token_id = eos_token_id
        super().__init__(bos_token_id=bos_token_id, eos_token_id=eos_token_id,
                         tie_word_embeddings=tie_word_embeddings, **kwargs)


class CodeT5pConfig(PretrainedConfig):
    model_type = "codet5p"
    is_composition = True

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        assert "encoder" in kwargs and "decoder" in kwargs, \
            "Config has to be initialized with encoder and decoder config"
        encoder_config = kwargs.pop("encoder")
        decoder_config = kwargs.pop("decoder")
        encoder_model_type = encoder_config.pop("model_type")
        decoder_model_type = decoder_config.pop("model_type")
        if encoder_model_type != decoder_model_type:
            print("Encoder and decoder model types are different")
        self.encoder = CodeT5pModuleConfig(**encoder_config)
        self.decoder = CodeT5pModuleConfig(**decoder_config)
        self.is_encoder_decoder = True

    def to_dict(self):
        output = copy.deepcopy(self.__dict__)
        output["encoder"] = self.encoder.to_dict()
        output["decoder"] = self.decoder.to_dict()
        output["model_type"] = self.__class__.model_type
        return output


# ---- modeling_codet5p.py (released) -----------------------------------------------------

def fixed_pos_embedding(x, seq_dim=1, seq_len=None):
    dim = x.shape[-1]
    if seq_len is None:
        seq_len = x.shape[seq_dim]
    inv_freq = 1.0 / (10000 ** (torch.arange(0, dim, 2) / dim))
    sinusoid_inp = (
        torch.einsum("i , j -> i j", torch.arange(seq_len, dtype=torch.float), inv_freq).to(x.device).float()
    )
    return torch.sin(sinusoid_inp), torch.cos(sinusoid_inp)


def rotate_every_two(x):
    x1 = x[:, :, :, ::2]
    x2 = x[:, :, :, 1::2]
    x = torch.stack((-x2, x1), dim=-1)
    return x.flatten(-2)


def duplicate_interleave(m):
    dim0 = m.shape[0]
    m = m.view(-1, 1)
    m = m.repeat(1, 2)
    m = m.view(dim0, -1)
    return m


def apply_rotary_pos_emb(x, sincos, offset=0):
    sin, cos = (duplicate_interleave(t)[None, offset: x.shape[1] + offset, None, :] for t in sincos)
    return (x * cos) + (rotate_every_two(x) * sin)


class CodeT5pAttention(nn.Module):
    def __init__(self, config, is_cross_attention=False, is_decoder=True):
        super().__init__()
        max_positions = config.max_position_embeddings
        self.register_buffer(
            "causal_mask",
            torch.tril(torch.ones((max_positions, max_positions), dtype=torch.uint8)).view(
                1, 1, max_positions, max_positions
            ),
        )
        self.attn_dropout = nn.Dropout(config.attn_pdrop)
        self.resid_dropout = nn.Dropout(config.resid_pdrop)
        self.embed_dim = config.hidden_size
        self.num_attention_heads = config.num_attention_heads
        self.head_dim = self.embed_dim // self.num_attention_heads
        if self.head_dim * self.num_attention_heads != self.embed_dim:
            raise ValueError("embed_dim must be divisible by num_attention_heads")
        self.scale_attn = torch.sqrt(torch.tensor(self.head_dim, dtype=torch.float32)).to(torch.get_default_dtype())
        self.is_decoder = is_decoder
        self.is_cross_attention = is_cross_attention
        if self.is_cross_attention:
            self.qkv_proj = nn.Linear(self.embed_dim, self.embed_dim * 2, bias=False)
            self.q_attn = nn.Linear(self.embed_dim, self.embed_dim, bias=False)
        else:
            self.qkv_proj = nn.Linear(self.embed_dim, self.embed_dim * 3, bias=False)
        self.out_proj = nn.Linear(self.embed_dim, self.embed_dim, bias=False)
        self.rotary_dim = None
        if config.rotary_dim is not None:
            self.rotary_dim = config.rotary_dim

    def _split_heads(self, x, n_head, dim_head, mp_num):
        reshaped = x.reshape(x.shape[:-1] + (n_head // mp_num, dim_head))
        reshaped = reshaped.reshape(x.shape[:-2] + (-1,) + reshaped.shape[-1:])
        return reshaped

    def _merge_heads(self, tensor, num_attention_heads, attn_head_size):
        if len(tensor.shape) == 5:
            tensor = tensor.permute(0, 1, 3, 2, 4).contiguous()
        elif len(tensor.shape) == 4:
            tensor = tensor.permute(0, 2, 1, 3).contiguous()
        else:
            raise ValueError(f"Input tensor rank should be one of [4, 5], but is: {len(tensor.shape)}")
        new_shape = tensor.size()[:-2] + (num_attention_heads * attn_head_size,)
        return tensor.view(new_shape)

    def _attn(self, query, key, value, attention_mask=None, head_mask=None):
        query = query.to(torch.float32)
        key = key.to(torch.float32)
        attn_weights = torch.matmul(query, key.transpose(-1, -2))
        attn_weights = attn_weights / self.scale_attn
        if not self.is_cross_attention and self.is_decoder:
            query_length, key_length = query.size(-2), key.size(-2)
            causal_mask = self.causal_mask[:, :, key_length - query_length: key_length, :key_length]
            mask_value = torch.finfo(attn_weights.dtype).min
            mask_value = torch.tensor(mask_value, dtype=attn_weights.dtype).to(attn_weights.device)
            attn_weights = torch.where(causal_mask.bool(), attn_weights, mask_value)
        if attention_mask is not None:
            attn_weights = attn_weights + attention_mask
        attn_weights = nn.Softmax(dim=-1)(attn_weights)
        attn_weights = attn_weights.to(value.dtype)
        attn_weights = self.attn_dropout(attn_weights)
        if head_mask is not None:
            attn_weights = attn_weights * head_mask
        attn_output = torch.matmul(attn_weights, value)
        return attn_output, attn_weights

    def forward(self, hidden_states, attention_mask=None, layer_past=None, head_mask=None,
                encoder_hidden_states=None, encoder_attention_mask=None, use_cache=False, output_attentions=False):
        if encoder_hidden_states is not None:
            if not hasattr(self, "q_attn"):
                raise ValueError("If class is used as cross attention, the weights `q_attn` have to be defined.")
            mp_num = 4
            local_dim = self.head_dim * self.num_attention_heads // mp_num
            q = self.q_attn(hidden_states)
            q_split = q.reshape(q.shape[:-1] + (mp_num, -1))
            query = torch.split(q_split, local_dim, dim=-1)[0]
            qkv = self.qkv_proj(encoder_hidden_states)
            qkv_split = qkv.reshape(qkv.shape[:-1] + (mp_num, -1))
            value, key = torch.split(qkv_split, local_dim, dim=-1)
            attention_mask = encoder_attention_mask
        else:
            qkv = self.qkv_proj(hidden_states)
            mp_num = 4
            qkv_split = qkv.reshape(qkv.shape[:-1] + (mp_num, -1))
            local_dim = self.head_dim * self.num_attention_heads // mp_num
            query, value, key = torch.split(qkv_split, local_dim, dim=-1)

        query = self._split_heads(query, self.num_attention_heads, self.head_dim, mp_num=mp_num)
        key = self._split_heads(key, self.num_attention_heads, self.head_dim, mp_num=mp_num)
        value = self._split_heads(value, self.num_attention_heads, self.head_dim, mp_num=mp_num)
        value = value.permute(0, 2, 1, 3)

        seq_len = key.shape[1]
        offset = 0
        if layer_past is not None:
            offset = layer_past[0].shape[-2]
            seq_len += offset

        if self.rotary_dim is not None:
            k_rot = key[:, :, :, : self.rotary_dim]
            k_pass = key[:, :, :, self.rotary_dim:]
            q_rot = query[:, :, :, : self.rotary_dim]
            q_pass = query[:, :, :, self.rotary_dim:]
            sincos = fixed_pos_embedding(k_rot, 1, seq_len=seq_len)
            k_rot = apply_rotary_pos_emb(k_rot, sincos, offset=offset)
            seq_len_q = query.shape[1]
            sincos_q = fixed_pos_embedding(q_rot, 1, seq_len=seq_len_q)
            q_rot = apply_rotary_pos_emb(q_rot, sincos_q, offset=offset)
            key = torch.cat([k_rot, k_pass], dim=-1)
            query = torch.cat([q_rot, q_pass], dim=-1)
        else:
            sincos = fixed_pos_embedding(key, 1, seq_len=seq_len)
            key = apply_rotary_pos_emb(key, sincos, offset=offset)
            query = apply_rotary_pos_emb(query, sincos, offset=offset)

        key = key.permute(0, 2, 1, 3)
        query = query.permute(0, 2, 1, 3)
        if layer_past is not None:
            past_key = layer_past[0]
            past_value = layer_past[1]
            key = torch.cat((past_key, key), dim=-2)
            value = torch.cat((past_value, value), dim=-2)
        if use_cache is True:
            present = (key, value)
        else:
            present = None
        attn_output, attn_weights = self._attn(query, key, value, attention_mask, head_mask)
        attn_output = self._merge_heads(attn_output, self.num_attention_heads, self.head_dim)
        attn_output = self.out_proj(attn_output)
        attn_output = self.resid_dropout(attn_output)
        outputs = (attn_output, present)
        if output_attentions:
            outputs += (attn_weights,)
        return outputs


class CodeT5pMLP(nn.Module):
    def __init__(self, intermediate_size, config):
        super().__init__()
        embed_dim = config.n_embd
        self.fc_in = nn.Linear(embed_dim, intermediate_size)
        self.fc_out = nn.Linear(intermediate_size, embed_dim)
        self.act = ACT2FN[config.activation_function]
        self.dropout = nn.Dropout(config.resid_pdrop)

    def forward(self, hidden_states):
        hidden_states = self.fc_in(hidden_states)
        hidden_states = self.act(hidden_states)
        hidden_states = self.fc_out(hidden_states)
        hidden_states = self.dropout(hidden_states)
        return hidden_states


class CodeT5pBlock(nn.Module):
    def __init__(self, config, layer_idx=None):
        super().__init__()
        inner_dim = config.n_inner if config.n_inner is not None else 4 * config.n_embd
        self.ln_1 = nn.LayerNorm(config.n_embd, eps=config.layer_norm_epsilon)
        if config.is_decoder is False:
            self.attn = CodeT5pAttention(config, is_cross_attention=False, is_decoder=False)
        else:
            self.attn = CodeT5pAttention(config)
        self.mlp = CodeT5pMLP(inner_dim, config)
        # Adding 1 cross-attention layer at the final decoder layer
        self.add_cross_attention_by_layer = True \
            if config.add_cross_attention and layer_idx == config.n_layer - 1 else False
        if config.add_cross_attention and self.add_cross_attention_by_layer:
            self.crossattention = CodeT5pAttention(config, is_cross_attention=True)

    def forward(self, hidden_states, layer_past=None, attention_mask=None, head_mask=None,
                encoder_hidden_states=None, encoder_attention_mask=None, use_cache=False, output_attentions=False):
        residual = hidden_states
        hidden_states = self.ln_1(hidden_states)
        attn_outputs = self.attn(hidden_states, layer_past=layer_past, attention_mask=attention_mask,
                                 head_mask=head_mask, use_cache=use_cache, output_attentions=output_attentions)
        attn_output = attn_outputs[0]
        outputs = attn_outputs[1:]
        feed_forward_hidden_states = self.mlp(hidden_states)
        if encoder_hidden_states is not None and self.add_cross_attention_by_layer:
            if not hasattr(self, "crossattention"):
                raise ValueError("cross-attention layers need `config.add_cross_attention=True`")
            cross_attn_outputs = self.crossattention(
                hidden_states, attention_mask=attention_mask, head_mask=head_mask,
                encoder_hidden_states=encoder_hidden_states, encoder_attention_mask=encoder_attention_mask,
                output_attentions=output_attentions)
            xattn_output = cross_attn_outputs[0]
            attn_output = attn_output + xattn_output
            outputs = outputs + cross_attn_outputs[2:]
        hidden_states = attn_output + feed_forward_hidden_states + residual
        if use_cache:
            outputs = (hidden_states,) + outputs
        else:
            outputs = (hidden_states,) + outputs[1:]
        return outputs


class CodeT5pPreTrainedModel(PreTrainedModel):
    config_class = CodeT5pModuleConfig
    base_model_prefix = "transformer"
    supports_gradient_checkpointing = True
    _no_split_modules = ["CodeT5pBlock"]

    def _init_weights(self, module):
        if isinstance(module, (nn.Linear,)):
            module.weight.data.normal_(mean=0.0, std=self.config.initializer_range)
            if module.bias is not None:
                module.bias.data.zero_()
        elif isinstance(module, nn.Embedding):
            module.weight.data.normal_(mean=0.0, std=self.config.initializer_range)
            if module.padding_idx is not None:
                module.weight.data[module.padding_idx].zero_()
        elif isinstance(module, nn.LayerNorm):
            module.bias.data.zero_()
            module.weight.data.fill_(1.0)


class CodeT5pModel(CodeT5pPreTrainedModel):
    def __init__(self, config):
        super().__init__(config)
        self.embed_dim = config.n_embd
        self.vocab_size = config.vocab_size
        self.wte = nn.Embedding(config.vocab_size, self.embed_dim)
        self.drop = nn.Dropout(config.embd_pdrop)
        self.h = nn.ModuleList([CodeT5pBlock(config, idx) for idx in range(config.n_layer)])
        self.ln_f = nn.LayerNorm(self.embed_dim, eps=config.layer_norm_epsilon)
        self.rotary_dim = min(config.rotary_dim, config.n_ctx // config.num_attention_heads)
        self.gradient_checkpointing = False
        self.post_init()

    def get_input_embeddings(self):
        return self.wte

    def forward(self, input_ids=None, past_key_values=None, attention_mask=None, token_type_ids=None,
                position_ids=None, head_mask=None, inputs_embeds=None, encoder_hidden_states=None,
                encoder_attention_mask=None, use_cache=None, output_attentions=None, output_hidden_states=None,
                return_dict=None):
        output_attentions = output_attentions if output_attentions is not None else self.config.output_attentions
        output_hidden_states = (
            output_hidden_states if output_hidden_states is not None else self.config.output_hidden_states
        )
        use_cache = use_cache if use_cache is not None else self.config.use_cache
        return_dict = return_dict if return_dict is not None else self.config.use_return_dict
        input_shape = input_ids.size()
        input_ids = input_ids.view(-1, input_shape[-1])
        batch_size = input_ids.shape[0]
        device = input_ids.device
        if past_key_values is None:
            past_length = 0
            past_key_values = tuple([None] * len(self.h))
        else:
            past_length = past_key_values[0][0].size(-2)
        if position_ids is None:
            position_ids = torch.arange(past_length, input_shape[-1] + past_length, dtype=torch.long, device=device)
            position_ids = position_ids.unsqueeze(0).view(-1, input_shape[-1])
        if attention_mask is not None:
            attention_mask = attention_mask.view(batch_size, -1)
            attention_mask = attention_mask[:, None, None, :]
            attention_mask = attention_mask.to(dtype=self.dtype)
            attention_mask = (1.0 - attention_mask) * torch.finfo(self.dtype).min
        if self.config.add_cross_attention and encoder_hidden_states is not None:
            encoder_batch_size, encoder_sequence_length, _ = encoder_hidden_states.size()
            encoder_hidden_shape = (encoder_batch_size, encoder_sequence_length)
            if encoder_attention_mask is None:
                encoder_attention_mask = torch.ones(encoder_hidden_shape, device=device)
            encoder_attention_mask = self.invert_attention_mask(encoder_attention_mask)
        else:
            encoder_attention_mask = None
        head_mask = self.get_head_mask(head_mask, self.config.n_layer)
        if inputs_embeds is None:
            inputs_embeds = self.wte(input_ids)
        hidden_states = inputs_embeds
        hidden_states = self.drop(hidden_states)
        output_shape = input_shape + (hidden_states.size(-1),)
        presents = () if use_cache else None
        all_self_attentions = () if output_attentions else None
        all_cross_attentions = () if output_attentions and self.config.add_cross_attention else None
        all_hidden_states = () if output_hidden_states else None
        for i, (block, layer_past) in enumerate(zip(self.h, past_key_values)):
            if output_hidden_states:
                all_hidden_states = all_hidden_states + (hidden_states,)
            outputs = block(hidden_states, layer_past=layer_past, attention_mask=attention_mask,
                            head_mask=head_mask[i], encoder_hidden_states=encoder_hidden_states,
                            encoder_attention_mask=encoder_attention_mask, use_cache=use_cache,
                            output_attentions=output_attentions)
            hidden_states = outputs[0]
            if use_cache is True:
                presents = presents + (outputs[1],)
            if output_attentions:
                all_self_attentions = all_self_attentions + (outputs[2 if use_cache else 1],)
                if self.config.add_cross_attention and self.add_cross_attention_by_layer:
                    all_cross_attentions = all_cross_attentions + (outputs[3 if use_cache else 2],)
        hidden_states = self.ln_f(hidden_states)
        hidden_states = hidden_states.view(output_shape)
        if output_hidden_states:
            all_hidden_states = all_hidden_states + (hidden_states,)
        return BaseModelOutputWithPastAndCrossAttentions(
            last_hidden_state=hidden_states, past_key_values=presents, hidden_states=all_hidden_states,
            attentions=all_self_attentions, cross_attentions=all_cross_attentions)


class CodeT5pForCausalLM(CodeT5pPreTrainedModel):
    _keys_to_ignore_on_load_missing = [r"h\.\d+\.attn\.causal_mask"]

    def __init__(self, config):
        super().__init__(config)
        self.transformer = CodeT5pModel(config)
        self.lm_head = nn.Linear(config.n_embd, config.vocab_size)
        self.post_init()

    def get_output_embeddings(self):
        return self.lm_head

    def forward(self, input_ids=None, past_key_values=None, attention_mask=None, token_type_ids=None,
                position_ids=None, head_mask=None, inputs_embeds=None, encoder_hidden_states=None,
                encoder_attention_mask=None, labels=None, use_cache=None, output_attentions=None,
                output_hidden_states=None, return_dict=None):
        transformer_outputs = self.transformer(
            input_ids, past_key_values=past_key_values, attention_mask=attention_mask,
            token_type_ids=token_type_ids, position_ids=position_ids, head_mask=head_mask,
            inputs_embeds=inputs_embeds, encoder_hidden_states=encoder_hidden_states,
            encoder_attention_mask=encoder_attention_mask, use_cache=use_cache,
            output_attentions=output_attentions, output_hidden_states=output_hidden_states,
            return_dict=return_dict)
        hidden_states = transformer_outputs[0]
        lm_logits = self.lm_head(hidden_states).to(torch.float32)
        return CausalLMOutputWithCrossAttentions(
            loss=None, logits=lm_logits, past_key_values=transformer_outputs.past_key_values,
            hidden_states=transformer_outputs.hidden_states, attentions=transformer_outputs.attentions,
            cross_attentions=transformer_outputs.cross_attentions)


def shift_tokens_right(input_ids, pad_token_id, decoder_start_token_id):
    shifted_input_ids = input_ids.new_zeros(input_ids.shape)
    shifted_input_ids[:, 1:] = input_ids[:, :-1].clone()
    shifted_input_ids[:, 0] = decoder_start_token_id
    shifted_input_ids.masked_fill_(shifted_input_ids == -100, pad_token_id)
    return shifted_input_ids


class CodeT5pEncoderDecoderModel(PreTrainedModel):
    config_class = CodeT5pConfig
    _no_split_modules = ["CodeT5pBlock"]

    def __init__(self, config):
        super().__init__(config)
        encoder = CodeT5pModel(config.encoder)
        decoder = CodeT5pForCausalLM(config.decoder)
        self.encoder = encoder
        self.decoder = decoder
        self.encoder.config = self.config.encoder
        self.decoder.config = self.config.decoder
        if (
                self.encoder.config.hidden_size != self.decoder.config.hidden_size
                and self.decoder.config.cross_attention_hidden_size is None
        ):
            self.enc_to_dec_proj = nn.Linear(self.encoder.config.hidden_size, self.decoder.config.hidden_size)
        if self.encoder.get_output_embeddings() is not None:
            raise ValueError("The encoder should not have a LM Head.")
        self.tie_weights()

    def tie_weights(self):
        if self.config.tie_encoder_decoder:
            decoder_base_model_prefix = self.decoder.base_model_prefix
            self._tie_encoder_decoder_weights(
                self.encoder, self.decoder._modules[decoder_base_model_prefix], self.decoder.base_model_prefix
            )

    def forward(self, input_ids=None, attention_mask=None, decoder_input_ids=None, decoder_attention_mask=None,
                use_cache=None, output_attentions=None, output_hidden_states=None, return_dict=None):
        encoder_outputs = self.encoder(input_ids=input_ids, attention_mask=attention_mask,
                                       output_attentions=output_attentions,
                                       output_hidden_states=output_hidden_states, return_dict=True)
        encoder_hidden_states = encoder_outputs[0]
        if (
                self.encoder.config.hidden_size != self.decoder.config.hidden_size
                and self.decoder.config.cross_attention_hidden_size is None
        ):
            encoder_hidden_states = self.enc_to_dec_proj(encoder_hidden_states)
        decoder_outputs = self.decoder(input_ids=decoder_input_ids, attention_mask=decoder_attention_mask,
                                       encoder_hidden_states=encoder_hidden_states,
                                       encoder_attention_mask=attention_mask, output_attentions=output_attentions,
                                       output_hidden_states=output_hidden_states, use_cache=use_cache,
                                       return_dict=True)
        return Seq2SeqLMOutput(
            logits=decoder_outputs.logits, decoder_hidden_states=decoder_outputs.hidden_states,
            decoder_attentions=decoder_outputs.attentions, cross_attentions=decoder_outputs.cross_attentions,
            encoder_last_hidden_state=encoder_outputs.last_hidden_state,
            encoder_hidden_states=encoder_outputs.hidden_states, encoder_attentions=encoder_outputs.attentions)


# ---- the fixture --------------------------------------------------------------------------

def r6(x):
    if isinstance(x, list):
        return [r6(v) for v in x]
    return float(f"{x:.6g}")


def module(n_embd, n_layer, n_head, n_inner, rotary_dim, decoder, vocab):
    """A sub-config in the released config.json's layout (the 2B's keys, tiny sizes)."""
    return {
        "_name_or_path": "tiny-codet5p-decoder" if decoder else "tiny-codet5p-encoder",
        "activation_function": "gelu_new",
        "add_cross_attention": decoder,
        "architectures": ["CodeT5pForCausalLM" if decoder else "CodeT5pModel"],
        "attn_pdrop": 0.0,
        "bos_token_id": 1,
        "cross_attention_hidden_size": None,
        "decoder_start_token_id": 0,
        "embd_pdrop": 0.0,
        "eos_token_id": 0,
        "initializer_range": 0.02,
        "is_decoder": decoder,
        "is_encoder_decoder": False,
        "layer_norm_epsilon": 1e-05,
        "model_type": "codet5p_module",
        "n_ctx": 64,
        "n_embd": n_embd,
        "n_head": n_head,
        "n_inner": n_inner,
        "n_layer": n_layer,
        "n_positions": 64,
        "pad_token_id": None,
        "resid_pdrop": 0.0,
        "rotary_dim": rotary_dim,
        "scale_attn_weights": True,
        "tie_encoder_decoder": False,
        "tie_word_embeddings": False,
        "tokenizer_class": "GPT2Tokenizer",
        "torch_dtype": "float16",
        "transformers_version": "4.21.3",
        "use_cache": True,
        "vocab_size": vocab,
    }


def encode(text):
    """The fixture's tokenizer.json through the `tokenizers` of the project's reference
    venv (tokenizers 0.13, which transformers 4.30 requires, predates its format)."""
    code = ("import json, sys; from tokenizers import Tokenizer; "
            "e = Tokenizer.from_file(sys.argv[1]).encode(sys.stdin.read()); "
            "print(json.dumps([e.ids, e.offsets]))")
    out = subprocess.run([REF_PYTHON, "-c", code, f"{OUT}/tokenizer.json"], input=text, text=True,
                         capture_output=True, check=True).stdout
    return json.loads(out)


def main():
    os.makedirs(OUT, exist_ok=True)
    for f in os.listdir(OUT):
        os.remove(f"{OUT}/{f}")
    # CodeGen's byte-level BPE (the 2B ships CodeGen's tokenizer): the tiny one of
    # tests/fixtures/tiny_codegen, `<|endoftext|>` = 0 (50256 in the real vocabulary).
    shutil.copy("tests/fixtures/tiny_codegen/tokenizer.json", f"{OUT}/tokenizer.json")
    vocab = len(json.load(open(f"{OUT}/tokenizer.json"))["model"]["vocab"])
    cfg_json = {
        "architectures": ["CodeT5pEncoderDecoderModel"],
        "auto_map": {
            "AutoConfig": "configuration_codet5p.CodeT5pConfig",
            "AutoModel": "modeling_codet5p.CodeGenModel",
            "AutoModelForSeq2SeqLM": "modeling_codet5p.CodeT5pEncoderDecoderModel",
        },
        # Encoder narrower than the decoder, as in the 2B (1024 -> 2560), so that
        # `enc_to_dec_proj` exists; their own head sizes and partial rotary widths (2B:
        # head_dim 64 rotary 32, head_dim 80 rotary 64).
        "decoder": module(32, 2, 8, 48, 2, True, vocab),
        "encoder": module(24, 2, 4, 32, 4, False, vocab),
        "is_encoder_decoder": True,
        "model_type": "codet5p",
        "torch_dtype": "float16",
        "transformers_version": None,
    }
    with open(f"{OUT}/config.json", "w") as f:
        json.dump(cfg_json, f, indent=2)
        f.write("\n")
    config = CodeT5pConfig(**copy.deepcopy(cfg_json))
    torch.manual_seed(0)
    model = CodeT5pEncoderDecoderModel(config).eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if ".ln_" in name and name.endswith("weight"):
                p.copy_(1.0 + 0.2 * torch.randn_like(p))
            else:
                p.normal_(0.0, 0.3)
            p.copy_(p.half().float())  # fp16-exact, stored as float16 like the release
    # The release's layout: a float16 pickle with the uint8 `causal_mask` buffers.
    sd = {k: (v if k.endswith("causal_mask") else v.half()) for k, v in model.state_dict().items()}
    torch.save(sd, f"{OUT}/pytorch_model.bin")
    # The same weights as safetensors (buffers left out), for that loading path.
    save_file({k: v.contiguous() for k, v in sd.items() if not k.endswith("causal_mask")},
              f"{OUT}/model.safetensors")
    assert any(k.endswith("crossattention.q_attn.weight") for k in sd)
    assert "enc_to_dec_proj.weight" in sd and "decoder.lm_head.bias" in sd

    # Loaded back through the pickle, as from_pretrained would read it.
    model = CodeT5pEncoderDecoderModel(CodeT5pConfig(**copy.deepcopy(cfg_json))).eval()
    model.load_state_dict({k: v.float() if v.dtype == torch.float16 else v
                           for k, v in torch.load(f"{OUT}/pytorch_model.bin").items()})

    with open(f"{SNIPPETS}/py_textwrap_indent.py", encoding="utf-8") as f:
        text = f.read().split("\n")[10].strip() + "\n"  # textwrap.py 480, dedented
    ids, offsets = encode(text)
    n = len(ids)
    start = config.decoder.decoder_start_token_id
    x = torch.tensor([ids])
    dec = shift_tokens_right(x, 0, start)
    mask = torch.ones_like(x)

    # The released code's bug with output_attentions (module docs), then its workaround.
    try:
        with torch.no_grad():
            model(input_ids=x, attention_mask=mask, decoder_input_ids=dec, output_attentions=True)
        raise SystemExit("expected the released AttributeError")
    except AttributeError as e:
        assert "add_cross_attention_by_layer" in str(e), e
    model.decoder.transformer.add_cross_attention_by_layer = False
    cross = []
    last = model.decoder.transformer.h[-1]
    assert hasattr(last, "crossattention")
    assert not any(hasattr(b, "crossattention") for b in model.decoder.transformer.h[:-1])
    last.crossattention.register_forward_hook(lambda m, i, o: cross.extend(o[2:]))
    with torch.no_grad():
        o = model(input_ids=x, attention_mask=mask, decoder_input_ids=dec, output_attentions=True,
                  output_hidden_states=True, use_cache=False)
        plain = model(input_ids=x, attention_mask=mask, decoder_input_ids=dec, use_cache=False)
    assert torch.equal(o.logits, plain.logits)
    assert len(cross) == 1
    enc_att = o.encoder_attentions
    # The encoder is bidirectional, the decoder causal.
    assert float(enc_att[0][0].triu(1).abs().sum()) > 0
    assert float(o.decoder_attentions[0][0].triu(1).abs().sum()) == 0
    logits = o.logits[0]
    logp = torch.log_softmax(logits.double(), dim=-1)
    label_bits = [float(-logp[p, ids[p]] / math.log(2)) for p in range(n)]
    cum = [0]
    for ch in text:
        cum.append(cum[-1] + len(ch.encode("utf-8")))
    ref = {
        "text": text,
        "ids": ids,
        "offsets": [[cum[a], cum[b]] for a, b in offsets],
        "decoder_input_ids": dec[0].tolist(),
        "decoder_start_token_id": start,
        "encoder_attention": r6([a[0].tolist() for a in enc_att]),
        "encoder_hidden_states": r6([h[0].tolist() for h in o.encoder_hidden_states]),
        "decoder_attention": r6([a[0].tolist() for a in o.decoder_attentions]),
        "cross_attention": r6([cross[0][0].tolist()]),
        "decoder_hidden_states": r6([h[0].tolist() for h in o.decoder_hidden_states]),
        "logits": r6(logits.tolist()),
        "label_bits": label_bits,
        "environment": {"torch": torch.__version__, "transformers": transformers.__version__,
                        "modelling": "released configuration_codet5p.py / modeling_codet5p.py"},
    }
    with open(f"{OUT}/reference.json", "w") as f:
        json.dump(ref, f)
    sizes = {f: os.path.getsize(f"{OUT}/{f}") for f in sorted(os.listdir(OUT))}
    print(OUT, n, "tokens;", sizes, "total", sum(sizes.values()))


if __name__ == "__main__":
    main()
