# Sourced by the scripts/real_*.sh checks: the pinned dependency folders (pip --target, --no-deps) that serve both
# interpreters, MindSpore's and the PyTorch reference's.

# same_python A B: stop (exit 2) unless the two interpreters share CPython's cache tag and platform, which one
# --target folder of compiled packages needs.
same_python() {
  local a b
  a="$("$1" -c 'import sys, sysconfig; print(sys.implementation.cache_tag, sysconfig.get_platform())')"
  b="$("$2" -c 'import sys, sysconfig; print(sys.implementation.cache_tag, sysconfig.get_platform())')"
  if [ "$a" != "$b" ]; then
    echo "the two interpreters differ ($a vs $b): one dependency folder cannot serve both" >&2
    exit 2
  fi
}

# pinned PYTHON DIR PACKAGE==VERSION...: install the packages into DIR once; DIR/.complete marks a finished install
# (an interrupted one is redone).
pinned() {
  local python=$1 dir=$2
  shift 2
  if [ ! -f "$dir/.complete" ]; then
    "$python" -m pip install -q --no-deps --target "$dir" "$@"
    touch "$dir/.complete"
  fi
}

# MindSpeed-LLM's HF side (transformers and what it imports) and what the reference venv lacks for it
HF_PINS=(transformers==4.57.1 accelerate==1.10.1 peft==0.7.1 tqdm==4.67.1 huggingface_hub==0.36.2 tokenizers==0.22.2
         regex==2024.11.6 pyyaml==6.0.2 filelock==3.16.1 fsspec==2024.10.0 six==1.16.0)
REF_HF_PINS=(safetensors==0.8.0 requests==2.32.3 urllib3==2.8.0 idna==3.20 certifi==2026.10.19.post1
             charset_normalizer==3.5.3)
