"""Stand-in for ``mindspeed.patch_utils`` of MindSpeed 2.2.0: the same API and behaviour, our own code.

What callers see is MindSpeed's: a class-level ``patches_info`` dict, ``Patch`` objects with
``orig_func``/``patch_func``/``final_patch_func``/``wrappers``/``is_applied``, the wrap-by-name rule
(``*wrapper``/``*decorator``), ``apply_patch`` importing the target's modules, setting the attribute
with ``setattr`` and rebinding every module attribute that still holds the old object, and
``parse_path`` creating a missing module attribute (``None``) on the way. Tests compare the final
bindings this manager produces with those of mindspeed_ms's compatible one.
"""

import importlib
import sys
import types


def get_func_name(func):
    return func if isinstance(func, str) else f"{func.__module__}.{func.__qualname__}"


def dummy_function_wrapper(func_name):
    def dummy_function(*args, **kwargs):
        raise RuntimeError(f"function {func_name} no exist")

    return dummy_function


def _is_wrapper(func):
    return getattr(func, "__name__", "").endswith(("wrapper", "decorator"))


class Patch:
    def __init__(self, orig_func_name, new_func, create_dummy):
        module_name, _, func_name = orig_func_name.rpartition(".")
        if module_name:
            self.orig_module_name, self.orig_func_name = module_name, func_name
        else:
            self.orig_module_name, self.orig_func_name = orig_func_name, None
        self.orig_module = None
        self.orig_func = None
        self.patch_func = None
        self.final_patch_func = None
        self.wrappers = []
        self.set_patch_func(new_func if new_func is not None else dummy_function_wrapper(orig_func_name))
        self.is_applied = False
        self.create_dummy = create_dummy

    @property
    def orig_func_id(self):
        return id(self.orig_func)

    @property
    def patch_func_id(self):
        return id(self.patch_func)

    def set_patch_func(self, new_func, force_patch=False):
        if _is_wrapper(new_func):
            if all(existing is not new_func for existing in self.wrappers):
                self.wrappers.append(new_func)
        elif self.patch_func is not None and not force_patch:
            raise RuntimeError(f"the patch of {self.orig_func_name} exist !")
        else:
            self.patch_func = new_func
        self.is_applied = False

    def remove_wrappers(self, wrapper_names=None):
        if wrapper_names is None:
            self.wrappers.clear()
            return
        names = {wrapper_names} if isinstance(wrapper_names, str) else set(wrapper_names)
        self.wrappers[:] = [w for w in self.wrappers if w.__name__ not in names]

    def remove_patch(self):
        for name, module in list(sys.modules.items()):
            if "mindspeed" in name or self.orig_func_name is None:
                continue
            if id(getattr(module, self.orig_func_name, None)) == id(self.final_patch_func):
                setattr(module, self.orig_func_name, self.orig_func)
        self.patch_func = None
        self.final_patch_func = None
        self.is_applied = False

    def apply_patch(self):
        if self.is_applied:
            return
        module, current = Patch.parse_path(self.orig_module_name, self.orig_func_name, self.create_dummy)
        if self.orig_module is None:
            self.orig_module, self.orig_func = module, current
        final = self.patch_func if self.patch_func is not None else self.orig_func
        for wrapper in self.wrappers:
            final = wrapper(final)
        if self.orig_func_name is not None:
            setattr(self.orig_module, self.orig_func_name, final)
            for value in list(sys.modules.values()):
                if hasattr(value, self.orig_func_name) and id(getattr(value, self.orig_func_name)) == id(current):
                    setattr(value, self.orig_func_name, final)
        self.is_applied = True
        self.final_patch_func = final

    @staticmethod
    def parse_path(module_path, function_name, create_dummy):
        parts = module_path.split(".")
        for index in range(1, len(parts) + 1):
            path = ".".join(parts[:index])
            parent = ".".join(parts[:index - 1])
            try:
                importlib.import_module(path)
                continue
            except ModuleNotFoundError:
                pass
            if parent and hasattr(importlib.import_module(parent), parts[index - 1]):
                # a class along the path: the attribute is read on it
                owner = getattr(importlib.import_module(parent), parts[index - 1])
                if hasattr(owner, function_name):
                    return owner, getattr(owner, function_name)
                if create_dummy:
                    return owner, dummy_function_wrapper(function_name)
                raise RuntimeError(f"no exist {function_name} of {owner}")
            if not create_dummy:
                raise ModuleNotFoundError(f"No module named {path!r}")
            module = types.ModuleType(path)
            module.__file__ = "mindspeed.dummy_module.py"
            module.__spec__ = importlib.machinery.ModuleSpec(path, None)
            sys.modules[path] = module
            if parent:
                setattr(sys.modules[parent], parts[index - 1], module)
        module = sys.modules[module_path]
        if function_name is None:
            return module, None
        if not hasattr(module, function_name):
            setattr(module, function_name, None)  # MindSpeed creates the attribute, typo or not
        return module, getattr(module, function_name)


class MindSpeedPatchesManager:
    patches_info = {}

    @staticmethod
    def register_patch(orig_func_name, new_func=None, force_patch=False, create_dummy=False):
        patch = MindSpeedPatchesManager.patches_info.get(orig_func_name)
        if patch is None:
            MindSpeedPatchesManager.patches_info[orig_func_name] = Patch(orig_func_name, new_func, create_dummy)
        else:
            patch.set_patch_func(new_func, force_patch)

    @staticmethod
    def remove_wrappers(orig_func_name, wrappers_name, remove_check=True):
        if orig_func_name not in MindSpeedPatchesManager.patches_info:
            raise ValueError(f"The function <{orig_func_name}> not exist.")
        patch = MindSpeedPatchesManager.patches_info[orig_func_name]
        before = len(patch.wrappers)
        patch.remove_wrappers(wrappers_name)
        if remove_check and before == len(patch.wrappers):
            raise RuntimeError("Remove wrappers has not remove anything.")

    @staticmethod
    def remove_patches():
        for patch in MindSpeedPatchesManager.patches_info.values():
            patch.remove_patch()
            patch.remove_wrappers()

    @staticmethod
    def apply_patches():
        for patch in MindSpeedPatchesManager.patches_info.values():
            patch.apply_patch()
