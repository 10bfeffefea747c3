def broadcast_data(keys, data, datatype):
    return ("pytorch", "broadcast_data")
