// A minimal HTTP/1.0 GET over a plain socket, for reading the server's
// Prometheus page in tests without an HTTP client library.
#ifndef POSEWIRE_TESTS_SERVICE_HTTP_GET_H_
#define POSEWIRE_TESTS_SERVICE_HTTP_GET_H_

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>

namespace posewire::server {

// GET http://127.0.0.1:port/path; the whole response (headers and body), or
// "" when the connection fails.
inline std::string HttpGet(int port, const std::string& path) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    close(fd);
    return "";
  }
  const std::string request =
      "GET " + path + " HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
  (void)!write(fd, request.data(), request.size());
  std::string response;
  char buffer[4096];
  ssize_t n;
  while ((n = read(fd, buffer, sizeof(buffer))) > 0) response.append(buffer, n);
  close(fd);
  return response;
}

}  // namespace posewire::server

#endif  // POSEWIRE_TESTS_SERVICE_HTTP_GET_H_
