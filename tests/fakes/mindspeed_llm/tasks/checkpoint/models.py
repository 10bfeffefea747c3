class ModelBase:
    def __register_functions(self):
        return ("pytorch", "register_functions")


class HuggingfaceModel(ModelBase):
    def get_modules_from_pretrained(self, device_map="cpu", trust_remote_code=True):
        return ("pytorch", "get_modules_from_pretrained")
