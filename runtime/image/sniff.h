// Recognises an encoded image by its first bytes (decode_image).
#pragma once

#include <string_view>

namespace pipec {

enum class ImageFormat { Unknown, Jpeg, Png };

/// JPEG starts with FF D8 FF, PNG with its 8-byte signature 89 'P' 'N' 'G' 0D 0A 1A 0A.
ImageFormat sniff_image_format(std::string_view data);

const char* image_format_name(ImageFormat f);

}  // namespace pipec
