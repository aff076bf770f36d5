"""Named sets of zoo models (no torch needed: run_zoo.py reads them too). "all" is every
torchvision classifier and every model of ours (zoo_models.all_models())."""

# Small models covering the op families transformers and modern CNNs bring (channel shuffle,
# squeeze-excite, hard-swish, layer norm, attention, rank-5/6 reshapes, transposed conv,
# resize): exports in well under a minute on two cores.
FAST = ["shufflenet_v2_x0_5", "mnasnet0_5", "squeezenet1_1", "mobilenet_v3_small",
        "small_vit", "audio_encoder", "mobilevit_like", "small_unet"]
# The attention models.
TRANSFORMERS = ["small_vit", "audio_encoder", "mobilevit_like", "vit_b_16", "vit_b_32",
                "swin_t", "swin_v2_t", "maxvit_t"]
# The mobile and classic CNNs and small transformers of `make bench-zoo`.
BENCH = ["efficientnet_b0", "mobilenet_v3_small", "mobilenet_v3_large", "mobilenet_v2",
         "squeezenet1_1", "shufflenet_v2_x1_0", "mnasnet1_0", "regnet_y_400mf", "resnet18",
         "googlenet", "small_vit", "audio_encoder", "mobilevit_like"]
SETS = {"fast": FAST, "transformers": TRANSFORMERS, "bench": BENCH}
