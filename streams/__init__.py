"""memoria: Kafka-native long-term memory and knowledge layer for chat agents."""
