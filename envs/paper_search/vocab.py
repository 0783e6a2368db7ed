"""The facet vocabulary of the generated paper corpus: fields, tasks, datasets and methods.

Every facet value has a canonical name (used in queries and in ``Paper.facets``) and aliases
(other ways papers write it), so that a keyword search for one phrasing misses papers written
with another, as in real literature search. Dataset names are real benchmark names used as
vocabulary only; every paper that mentions them is generated.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Facet:
    """One facet value.

    Attributes:
        name: Canonical name, e.g. ``"graph neural network"``.
        aliases: Other phrasings papers use, e.g. ``("GNN", "message-passing network")``.
    """

    name: str
    aliases: tuple[str, ...] = ()

    @property
    def phrasings(self) -> tuple[str, ...]:
        """The canonical name followed by the aliases."""
        return (self.name, *self.aliases)


@dataclass(frozen=True)
class Task(Facet):
    """A research task with the benchmark datasets papers evaluate it on."""

    datasets: tuple[str, ...] = ()


@dataclass(frozen=True)
class Field:
    """A research field: its tasks and the methods its papers use."""

    name: str
    tasks: tuple[Task, ...]
    methods: tuple[Facet, ...]


def _t(name: str, aliases: tuple[str, ...], datasets: tuple[str, ...]) -> Task:
    return Task(name=name, aliases=aliases, datasets=datasets)


def _m(name: str, *aliases: str) -> Facet:
    return Facet(name=name, aliases=aliases)


TRANSFORMER = _m("transformer", "self-attention network", "attention-based encoder")
CONTRASTIVE = _m("contrastive learning", "contrastive objective", "InfoNCE training")
DISTILLATION = _m("knowledge distillation", "teacher-student training", "model compression")
SELF_SUPERVISED = _m("self-supervised pretraining", "self-supervised learning", "pretext tasks")
DIFFUSION = _m("diffusion model", "denoising diffusion", "score-based generative model")
RNN = _m("recurrent neural network", "LSTM", "gated recurrent network")
AUGMENTATION = _m("data augmentation", "synthetic training examples", "augmentation policy")

FIELDS: tuple[Field, ...] = (
    Field(
        "natural language processing",
        tasks=(
            _t(
                "machine translation",
                ("neural machine translation", "translation between languages"),
                ("WMT14 English-German", "IWSLT14", "FLORES-200"),
            ),
            _t(
                "question answering",
                ("reading comprehension", "open-domain QA"),
                ("SQuAD", "Natural Questions", "TriviaQA"),
            ),
            _t(
                "text summarization",
                ("abstractive summarization", "document summarization"),
                ("CNN/DailyMail", "XSum", "Multi-News"),
            ),
            _t(
                "sentiment analysis",
                ("opinion mining", "sentiment classification"),
                ("SST-2", "IMDb reviews", "Yelp polarity"),
            ),
            _t(
                "named entity recognition",
                ("NER", "entity tagging"),
                ("CoNLL-2003", "OntoNotes 5.0", "WNUT-17"),
            ),
        ),
        methods=(
            TRANSFORMER,
            RNN,
            _m("pretrained language model", "BERT-style encoder", "masked language modelling"),
            _m("prompt tuning", "soft prompts", "prompt-based learning"),
            _m(
                "retrieval augmentation",
                "retrieval-augmented generation",
                "nearest-neighbour memory",
            ),
            CONTRASTIVE,
            DISTILLATION,
            AUGMENTATION,
        ),
    ),
    Field(
        "computer vision",
        tasks=(
            _t(
                "image classification",
                ("visual recognition", "image categorization"),
                ("ImageNet", "CIFAR-10", "CIFAR-100"),
            ),
            _t(
                "object detection",
                ("object localization", "bounding-box detection"),
                ("COCO", "PASCAL VOC", "LVIS"),
            ),
            _t(
                "semantic segmentation",
                ("pixel-wise labelling", "dense scene parsing"),
                ("Cityscapes", "ADE20K", "PASCAL Context"),
            ),
            _t(
                "image generation",
                ("image synthesis", "generative image modelling"),
                ("FFHQ", "LSUN Bedrooms", "CelebA-HQ"),
            ),
            _t(
                "action recognition",
                ("video classification", "human activity recognition"),
                ("Kinetics-400", "UCF101", "Something-Something v2"),
            ),
        ),
        methods=(
            _m("convolutional neural network", "CNN", "ConvNet"),
            _m("vision transformer", "ViT", "patch-based transformer"),
            DIFFUSION,
            _m("generative adversarial network", "GAN", "adversarial generator"),
            SELF_SUPERVISED,
            _m("neural architecture search", "NAS", "automated architecture design"),
            DISTILLATION,
            AUGMENTATION,
        ),
    ),
    Field(
        "reinforcement learning",
        tasks=(
            _t(
                "continuous control",
                ("locomotion control", "control from proprioception"),
                ("MuJoCo", "DeepMind Control Suite", "PyBullet Gym"),
            ),
            _t(
                "game playing",
                ("video game agents", "playing games from pixels"),
                ("Atari 2600", "Procgen", "NetHack"),
            ),
            _t(
                "robotic manipulation",
                ("robot grasping", "dexterous manipulation"),
                ("Meta-World", "RLBench", "robosuite"),
            ),
            _t(
                "multi-agent coordination",
                ("cooperative multi-agent RL", "team coordination"),
                ("SMAC", "Google Research Football", "Hanabi"),
            ),
            _t(
                "offline reinforcement learning",
                ("batch RL", "learning from logged data"),
                ("D4RL", "RL Unplugged", "NeoRL"),
            ),
        ),
        methods=(
            _m("policy gradient", "actor-critic", "proximal policy optimization"),
            _m("Q-learning", "deep Q-network", "value-based learning"),
            _m("model-based reinforcement learning", "world model", "learned dynamics model"),
            _m("imitation learning", "behaviour cloning", "learning from demonstrations"),
            _m("intrinsic motivation", "curiosity-driven exploration", "exploration bonus"),
            _m("hierarchical reinforcement learning", "options framework", "skill discovery"),
            TRANSFORMER,
        ),
    ),
    Field(
        "graph learning",
        tasks=(
            _t(
                "node classification",
                ("vertex classification", "semi-supervised node labelling"),
                ("Cora", "Citeseer", "ogbn-arxiv"),
            ),
            _t(
                "link prediction",
                ("knowledge graph completion", "edge prediction"),
                ("FB15k-237", "WN18RR", "ogbl-collab"),
            ),
            _t(
                "graph classification",
                ("whole-graph classification", "graph-level prediction"),
                ("MUTAG", "PROTEINS", "ogbg-molhiv"),
            ),
            _t(
                "molecular property prediction",
                ("molecule property regression", "chemical property prediction"),
                ("QM9", "ZINC", "MoleculeNet"),
            ),
            _t(
                "recommendation",
                ("collaborative filtering", "recommender systems"),
                ("MovieLens-1M", "Amazon-Book", "Yelp2018"),
            ),
        ),
        methods=(
            _m("graph neural network", "GNN", "message-passing network"),
            _m("graph attention", "graph attention network", "attention over neighbours"),
            _m("graph transformer", "transformer on graphs", "structural positional encodings"),
            _m("spectral graph convolution", "spectral filters", "Chebyshev polynomial filters"),
            _m("random walk embedding", "node2vec-style embedding", "skip-gram on walks"),
            CONTRASTIVE,
            SELF_SUPERVISED,
        ),
    ),
    Field(
        "speech processing",
        tasks=(
            _t(
                "speech recognition",
                ("ASR", "speech-to-text"),
                ("LibriSpeech", "Common Voice", "Switchboard"),
            ),
            _t(
                "speaker verification",
                ("speaker recognition", "voice biometrics"),
                ("VoxCeleb1", "VoxCeleb2", "CN-Celeb"),
            ),
            _t("text-to-speech", ("speech synthesis", "TTS"), ("LJSpeech", "VCTK", "LibriTTS")),
            _t(
                "speech enhancement",
                ("noise suppression", "speech denoising"),
                ("VoiceBank-DEMAND", "DNS Challenge", "WHAM!"),
            ),
        ),
        methods=(
            TRANSFORMER,
            _m("conformer", "convolution-augmented transformer", "conformer encoder"),
            _m("connectionist temporal classification", "CTC", "alignment-free training"),
            SELF_SUPERVISED,
            DIFFUSION,
            RNN,
            DISTILLATION,
        ),
    ),
    Field(
        "time series analysis",
        tasks=(
            _t(
                "time series forecasting",
                ("long-horizon forecasting", "multivariate forecasting"),
                ("ETTh1", "Electricity", "Traffic"),
            ),
            _t(
                "anomaly detection",
                ("outlier detection", "fault detection in sensor streams"),
                ("SMD", "MSL", "SWaT"),
            ),
            _t(
                "time series classification",
                ("sequence classification", "temporal pattern recognition"),
                ("UCR archive", "UEA archive", "Sleep-EDF"),
            ),
        ),
        methods=(
            TRANSFORMER,
            RNN,
            _m("state space model", "structured state space", "linear recurrent layer"),
            _m("temporal convolution", "dilated convolution", "TCN"),
            CONTRASTIVE,
            DIFFUSION,
        ),
    ),
)

#: Years papers are dated in (inclusive).
YEARS = range(2012, 2025)
