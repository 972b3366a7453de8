#include <cstdio>
#include "crashtest/campaign.h"
int main(int argc, char** argv) {
  pmindex::crashtest::CampaignOptions o;
  o.index = "pftree"; o.ops = atoi(argv[1]); o.seed = 5; o.images = 2;
  o.only_point = atoi(argv[2]); o.only_image = argv[3]; o.fork = false;
  if (argc > 4) o.mutant = argv[4];
  o.log = [](const std::string& l) { fprintf(stderr, "%s\n", l.c_str()); };
  auto r = pmindex::crashtest::RunAdrCampaign(o);
  printf("%s\n", pmindex::crashtest::FormatResult(r).c_str());
}
