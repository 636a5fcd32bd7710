"""The reranker network: a BERT that reads query and passage together, with a segment-pooling head.

Why not BertForSequenceClassification: all-MiniLM-L6-v2 was trained with mean pooling, so its [CLS]
vector barely varies between inputs and a CLS classifier starts from a constant score (training from
there needs far more steps than a CPU budget allows). This head mean-pools the query tokens and the
passage tokens of the joint encoding separately and scores

    score = similarity_scale * cos(query mean, passage mean) + joint_head(mean of all tokens)

so the untrained model already ranks like the bi-encoder it starts from (joint_head starts at zero),
and training teaches the cross-attention layers and both head terms what relevance means.
"""

from __future__ import annotations

from pathlib import Path

import torch
from safetensors import safe_open
from safetensors.torch import load_file, save_file
from torch import nn
from transformers import AutoTokenizer, BertConfig, BertModel, PreTrainedTokenizerBase

from retrieval import weight_deltas
from runtime.packaged_models import default_model_dir

WEIGHTS_FILE = "model.int4-delta.safetensors"  # retrieval/weight_deltas.py
FLOAT_WEIGHTS_FILE = "model.safetensors"  # float16/32, as checkpoints before the deltas were written
HEAD_NAME = "segment-pooling"  # stored in config.json as `reranker_head`


class SegmentPoolingCrossEncoder(nn.Module):
    def __init__(self, config: BertConfig, initial_scale: float = 20.0) -> None:
        super().__init__()
        self.config = config
        self.bert = BertModel(config, add_pooling_layer=False)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)
        self.joint_head = nn.Linear(config.hidden_size, 1)
        nn.init.zeros_(self.joint_head.weight)
        nn.init.zeros_(self.joint_head.bias)
        self.similarity_scale = nn.Parameter(torch.tensor(float(initial_scale)))

    def forward(
        self, input_ids: torch.Tensor, attention_mask: torch.Tensor, token_type_ids: torch.Tensor,
        return_pooled: bool = False,
    ) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
        """One relevance score per pair, shape (batch,); with return_pooled also the mean of all tokens of the
        joint encoding, (batch, hidden), which the answer head (retrieval/answer_head.py) reads."""
        hidden = self.bert(
            input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
        ).last_hidden_state
        mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
        passage_mask = mask * token_type_ids.unsqueeze(-1).to(hidden.dtype)
        query_mask = mask - passage_mask
        query = _masked_mean(hidden, query_mask)
        passage = _masked_mean(hidden, passage_mask)
        similarity = nn.functional.cosine_similarity(query.float(), passage.float(), dim=-1)
        pooled = _masked_mean(hidden, mask)
        joint = self.joint_head(self.dropout(pooled)).squeeze(-1).float()
        score = self.similarity_scale.float() * similarity + joint
        return (score, pooled.float()) if return_pooled else score

    @classmethod
    def from_encoder(cls, encoder_dir: Path, num_layers: int | None = None) -> SegmentPoolingCrossEncoder:
        """A new reranker whose BERT is the (first num_layers layers of the) encoder in encoder_dir."""
        encoder = BertModel.from_pretrained(encoder_dir, local_files_only=True, add_pooling_layer=False)
        config = encoder.config
        if num_layers is not None and num_layers < config.num_hidden_layers:
            encoder.encoder.layer = encoder.encoder.layer[:num_layers]
            config.num_hidden_layers = num_layers
        model = cls(config)
        model.bert.load_state_dict(encoder.state_dict())
        return model

    def set_depth(self, num_layers: int, encoder_dir: Path) -> None:
        """Keep the first num_layers layers; if that is more than we have, append the missing ones from the
        plain encoder in encoder_dir (a trained shallow reranker grows one layer deeper without starting over)."""
        layers = self.bert.encoder.layer
        if num_layers > len(layers):
            donor = BertModel.from_pretrained(encoder_dir, local_files_only=True, add_pooling_layer=False)
            if donor.config.hidden_size != self.config.hidden_size or num_layers > len(donor.encoder.layer):
                raise ValueError(f"{encoder_dir} cannot supply layers {len(layers) + 1}-{num_layers} of this reranker.")
            layers.extend(donor.encoder.layer[len(layers) : num_layers])
        del layers[num_layers:]
        self.config.num_hidden_layers = num_layers

    @classmethod
    def load(cls, model_dir: Path) -> SegmentPoolingCrossEncoder:
        """Load a saved reranker (4-bit deltas or float16 on disk; the model is float32 in memory)."""
        config = BertConfig.from_pretrained(model_dir, local_files_only=True)
        if getattr(config, "reranker_head", None) != HEAD_NAME:
            raise ValueError(f"{model_dir}/config.json does not describe a {HEAD_NAME} reranker.")
        model = cls(config)
        path = weights_file(model_dir)
        if path.name == WEIGHTS_FILE:
            with safe_open(str(path), framework="pt") as stored:
                metadata = stored.metadata() or {}
            state = weight_deltas.decode(load_file(path), metadata)
        else:
            state = {name: tensor.float() for name, tensor in load_file(path).items()}
        model.load_state_dict(state)
        return model.eval()

    def save(self, model_dir: Path) -> None:
        """config.json and the weights as 4-bit deltas against all-MiniLM-L6-v2 (retrieval/weight_deltas.py)."""
        model_dir.mkdir(parents=True, exist_ok=True)
        self.config.reranker_head = HEAD_NAME
        self.config.architectures = [type(self).__name__]
        self.config.save_pretrained(model_dir)
        stored, metadata = weight_deltas.encode(self.state_dict())
        save_file(stored, model_dir / WEIGHTS_FILE, metadata=metadata)
        (model_dir / FLOAT_WEIGHTS_FILE).unlink(missing_ok=True)  # one set of weights per directory


def weights_file(model_dir: Path) -> Path:
    """The weights file of a saved cross-encoder: the 4-bit deltas, or an older float checkpoint's."""
    for name in (WEIGHTS_FILE, FLOAT_WEIGHTS_FILE):
        if (model_dir / name).is_file():
            return model_dir / name
    raise FileNotFoundError(f"{model_dir} holds no {WEIGHTS_FILE} (nor {FLOAT_WEIGHTS_FILE}).")


def load_tokenizer() -> PreTrainedTokenizerBase:
    """Every cross-encoder here reads all-MiniLM-L6-v2's vocabulary, so they share its installed tokenizer
    (truncation and padding are set per call)."""
    return AutoTokenizer.from_pretrained(default_model_dir(), local_files_only=True)


def _masked_mean(hidden: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    return (hidden * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1.0)
