"""What the tests, the benchmarks and the Makefile share to run real parts on loopback: a Kafka KRaft node from Maven
Central (kafka_node), the proxy and the embedded controller as processes (processes), and raw Kafka requests over a
socket (wire). Not part of the product's packages: nothing here is installed, and nothing in the product imports it."""
