#include "runtime/image/sniff.h"

namespace pipec {

ImageFormat sniff_image_format(std::string_view d) {
  if (d.size() >= 3 && static_cast<unsigned char>(d[0]) == 0xFF && static_cast<unsigned char>(d[1]) == 0xD8 &&
      static_cast<unsigned char>(d[2]) == 0xFF)
    return ImageFormat::Jpeg;
  if (d.size() >= 8 && d.substr(0, 8) == std::string_view("\x89PNG\r\n\x1a\n", 8)) return ImageFormat::Png;
  return ImageFormat::Unknown;
}

const char* image_format_name(ImageFormat f) {
  switch (f) {
    case ImageFormat::Jpeg: return "JPEG";
    case ImageFormat::Png: return "PNG";
    default: return "unknown";
  }
}

}  // namespace pipec
