print("summary")
