class SharedMemoryManager:
    origin = "pytorch"

    def __init__(self, name, create=False, size=0):
        self.name = name
